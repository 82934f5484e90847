/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-ucount.h"

#include "jail-error.h"

#include <errno.h>
#include <sys/prctl.h>
#include <linux/securebits.h>
#include <unistd.h>

int jail_ucount_owner_enter(uid_t id, int *ret_saved_securebits)
{
        int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        if (bits < 0)
                return jail_errorf(-errno, "PR_GET_SECUREBITS: %m");
        /* Keep the capabilities across the euid change: some kernels refuse user namespaces to
         * creators without CAP_SYS_ADMIN (Debian's unprivileged_userns_clone, LSM policies). */
        if (prctl(PR_SET_SECUREBITS, (unsigned long)(bits | SECBIT_NO_SETUID_FIXUP), 0, 0, 0) < 0)
                return jail_errorf(-errno, "PR_SET_SECUREBITS: %m");
        if (setresgid((gid_t)-1, (gid_t)id, (gid_t)-1) < 0 ||
            setresuid((uid_t)-1, id, (uid_t)-1) < 0) {
                int r = -errno;
                (void)jail_ucount_owner_leave(bits);
                return jail_errorf(r, "effective ids %u: %m", (unsigned)id);
        }
        *ret_saved_securebits = bits;
        return 0;
}

int jail_ucount_owner_leave(int saved_securebits)
{
        /* uid 0 is still the real and saved uid: going back needs no privilege. */
        if (setresuid((uid_t)-1, 0, (uid_t)-1) < 0 || setresgid((gid_t)-1, 0, (gid_t)-1) < 0)
                return jail_errorf(-errno, "effective ids back to 0: %m");
        if (prctl(PR_SET_SECUREBITS, (unsigned long)saved_securebits, 0, 0, 0) < 0)
                return jail_errorf(-errno, "PR_SET_SECUREBITS: %m");
        return 0;
}
