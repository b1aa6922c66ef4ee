// The project's schema file: an empty Python module to import (so the .so loads and its
// TORCH_LIBRARY runs), the operators' schemas, and CPU implementations.
#include <Python.h>
#include <ATen/Operators.h>
#include <torch/all.h>
#include <torch/library.h>

extern "C" {
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
  return PyModule_Create(&module_def);
}
}

namespace brrr_registered {

at::Tensor myfma_cpu(const at::Tensor& a, const at::Tensor& b, double c) { return a * b + c; }
at::Tensor mymul_cpu(const at::Tensor& a, const at::Tensor& b) { return a * b; }

TORCH_LIBRARY(brrr_registered, m) {
  m.def("myfma(Tensor a, Tensor b, float c) -> Tensor");
  m.def("mymul(Tensor a, Tensor b) -> Tensor");
}

TORCH_LIBRARY_IMPL(brrr_registered, CPU, m) {
  m.impl("myfma", &myfma_cpu);
  m.impl("mymul", &mymul_cpu);
}

}  // namespace brrr_registered
