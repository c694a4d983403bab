//go:build cgo && !payidem_dynamic && !(linux && (amd64 || arm64)) && !(windows && amd64)

package payidem

// This module carries prebuilt libraries for linux/amd64 and linux/arm64
// (glibc >= 2.17) and windows/amd64 (MinGW-w64) only. Elsewhere, build libpayidem from the repository
// (`make lib` / scripts/dist/build-c.sh, `make install`) and use the
// installed shared library with the build tag payidem_dynamic (pkg-config).
var _ = payidem_has_no_prebuilt_library_for_this_GOOS_GOARCH_build_with_tag_payidem_dynamic
