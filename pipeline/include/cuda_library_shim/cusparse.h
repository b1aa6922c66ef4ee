// brrr's stand-in for <cusparse.h> (see README.txt here): the handle and status torch's headers name.
#pragma once
struct cusparseContext;
typedef struct cusparseContext* cusparseHandle_t;
typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;
const char* cusparseGetErrorString(cusparseStatus_t status);
