/* SPDX-License-Identifier: Apache-2.0 */
#include "thread-util.h"

#include <pthread.h>

int thread_start_detached(void *(*fn)(void *), void *arg, size_t stack_size)
{
        pthread_attr_t attr;
        pthread_t t;
        int e = pthread_attr_init(&attr);
        if (e != 0)
                return -e;
        e = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (e == 0 && stack_size > 0)
                e = pthread_attr_setstacksize(&attr, stack_size);
        if (e == 0)
                e = pthread_create(&t, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        return -e;
}
