// Compiles include/payidem.h as C++11 (`make test-c`): the header must be
// usable from C++ with extern "C" linkage and no warnings.
#include "payidem.h"

static_assert(sizeof(payidem_result) == 4, "payidem_result is 32 bits");
static_assert(PAYIDEM_BUFFER_TOO_SMALL == 100, "ABI-only codes start at 100");

int payidem_header_compiles_as_cxx() {
    payidem_error *err = nullptr;
    payidem_signer *signer = nullptr;
    payidem_signed_headers headers;
    const unsigned char secret[] = "0123456789abcdef";
    payidem_result rc = payidem_signer_new("key", secret, 16, &signer, &err);
    if (rc == PAYIDEM_OK) {
        rc = payidem_signer_sign_into(signer, "GET", "/", nullptr, nullptr, 0, 0, &headers, &err);
    }
    payidem_signer_free(signer);
    payidem_error_free(err);
    return static_cast<int>(rc);
}
