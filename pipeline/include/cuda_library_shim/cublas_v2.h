// brrr's stand-in for <cublas_v2.h> (see README.txt here): the handle and status torch's headers
// name. No routine: a wrapper calling cuBLAS needs the real header.
#pragma once
struct cublasContext;
typedef struct cublasContext* cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
