// brrr's stand-in for <cusolverDn.h> (see README.txt here): the handle torch's headers name.
#pragma once
#include "cusolver_common.h"
struct cusolverDnContext;
typedef struct cusolverDnContext* cusolverDnHandle_t;
