/* SPDX-License-Identifier: Apache-2.0 */
#include "native-error.h"

const char *sbx_native_error_code(int status)
{
        switch (status) {
        case 400:
                return "bad_request";
        case 401:
                return "unauthorized";
        case 403:
                return "forbidden";
        case 404:
                return "not_found";
        case 405:
                return "method_not_allowed";
        case 409:
                return "conflict";
        case 413:
                return "payload_too_large";
        case 422:
                return "unprocessable";
        case 429:
                return "too_many_requests";
        case 502:
                return "sandbox_unavailable";
        case 503:
                return "unavailable";
        case 504:
                return "timeout";
        case 507:
                return "insufficient_storage";
        default:
                return status >= 500 ? "internal" : "bad_request";
        }
}
