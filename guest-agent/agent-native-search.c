/* SPDX-License-Identifier: Apache-2.0 */
/* Native search and watch (next commit). */
#include "agent-native.h"
