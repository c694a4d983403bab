/*
 * Prints who a file's DACL lets in, one allow entry a line, as
 * "SID RIGHTS-HEX", then "owner-user SID" for the user running it:
 * what scripts/dist/test-windows.sh reads to prove that a journal written
 * under Wine grants its owner alone. "no DACL" when the file has none
 * (everyone may do anything).
 *
 *   dacl.exe PATH
 */
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>
#include <stdio.h>

static int print_sid(const char *prefix, PSID sid, DWORD mask, int with_mask) {
    LPSTR text = NULL;
    if (!ConvertSidToStringSidA(sid, &text)) {
        return 0;
    }
    if (with_mask) {
        printf("%s%s %08lx\n", prefix, text, (unsigned long)mask);
    } else {
        printf("%s%s\n", prefix, text);
    }
    LocalFree(text);
    return 1;
}

int main(int argc, char **argv) {
    PSECURITY_DESCRIPTOR sd = NULL;
    PACL dacl = NULL;
    HANDLE token = NULL;
    BYTE user[256];
    DWORD len = 0;
    DWORD i;

    if (argc != 2) {
        fprintf(stderr, "usage: dacl.exe PATH\n");
        return 2;
    }
    if (GetNamedSecurityInfoA(argv[1], SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, NULL, NULL,
                              &dacl, NULL, &sd) != ERROR_SUCCESS) {
        fprintf(stderr, "cannot read the DACL of %s\n", argv[1]);
        return 1;
    }
    if (dacl == NULL) {
        printf("no DACL\n");
    } else {
        for (i = 0; i < dacl->AceCount; i++) {
            LPVOID ace = NULL;
            ACE_HEADER *header;
            if (!GetAce(dacl, i, &ace)) {
                return 1;
            }
            header = (ACE_HEADER *)ace;
            if (header->AceType == ACCESS_ALLOWED_ACE_TYPE) {
                ACCESS_ALLOWED_ACE *allowed = (ACCESS_ALLOWED_ACE *)ace;
                if (!print_sid("", (PSID)&allowed->SidStart, allowed->Mask, 1)) {
                    return 1;
                }
            } else {
                printf("entry of type %u\n", (unsigned)header->AceType);
            }
        }
    }
    LocalFree(sd);
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token) ||
        !GetTokenInformation(token, TokenUser, user, sizeof user, &len) ||
        !print_sid("owner-user ", ((TOKEN_USER *)user)->User.Sid, 0, 0)) {
        return 1;
    }
    CloseHandle(token);
    return 0;
}
