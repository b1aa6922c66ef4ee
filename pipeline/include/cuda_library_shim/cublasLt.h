// brrr's stand-in for <cublasLt.h> (see README.txt here): the handle torch's headers name.
#pragma once
#include <cublas_v2.h>
struct cublasLtContext;
typedef struct cublasLtContext* cublasLtHandle_t;
