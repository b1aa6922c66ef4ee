// brrr's CPU stand-in for <cublasLt.h>: the handle and its setup only (see cublas_v2.h here).
#pragma once
#include "cublas_v2.h"

struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;

inline cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
    static char one;
    *handle = reinterpret_cast<cublasLtHandle_t>(&one);
    return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasLtDestroy(cublasLtHandle_t) { return CUBLAS_STATUS_SUCCESS; }
