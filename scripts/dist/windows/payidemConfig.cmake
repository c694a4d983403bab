# CMake package of payidem for Windows x64 (the zip of build-windows.sh):
# find_package(payidem 0.1 REQUIRED) gives
#   payidem::payidem         the DLL (bin/payidem.dll) through its import
#                            library (lib/libpayidem.dll.a for MinGW,
#                            lib/payidem.lib for MSVC)
# and payidem_VERSION, payidem_INCLUDE_DIR.

get_filename_component(_payidem_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(payidem_INCLUDE_DIR "${_payidem_prefix}/include")

if(MSVC)
  set(_payidem_implib "${_payidem_prefix}/lib/payidem.lib")
else()
  set(_payidem_implib "${_payidem_prefix}/lib/libpayidem.dll.a")
endif()

if(NOT TARGET payidem::payidem AND EXISTS "${_payidem_prefix}/bin/payidem.dll")
  add_library(payidem::payidem SHARED IMPORTED)
  set_target_properties(payidem::payidem PROPERTIES
    IMPORTED_LOCATION "${_payidem_prefix}/bin/payidem.dll"
    IMPORTED_IMPLIB "${_payidem_implib}"
    INTERFACE_INCLUDE_DIRECTORIES "${payidem_INCLUDE_DIR}")
endif()

if(NOT TARGET payidem::payidem)
  set(payidem_FOUND FALSE)
  set(payidem_NOT_FOUND_MESSAGE "no bin/payidem.dll under ${_payidem_prefix}")
endif()

unset(_payidem_prefix)
unset(_payidem_implib)
