/*
 * What Windows 10 and later provide in bcryptprimitives.dll and Wine 8
 * (Debian 12) lacks: ProcessPrng, through which Rust's standard library
 * reads random bytes. Installed into the throwaway Wine prefixes of the
 * Windows tests (scripts/dist/wine-prefix.sh) only, never shipped: it
 * forwards to BCryptGenRandom with the system's preferred generator, as
 * Windows' own ProcessPrng draws from the system generator.
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        if (BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
