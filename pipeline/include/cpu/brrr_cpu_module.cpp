// Linked into the CPU build of an op brought as its own torch extension (cuda/module_build.py): the
// checked build instruments the author's wrapper too, and torch's and pybind11's headers give that
// file global objects with dynamic initialisers, around which gcc calls these two. brrr checks
// accesses, not initialisation order, so they do nothing.
extern "C" {
void __asan_before_dynamic_init(const char*) {}
void __asan_after_dynamic_init() {}
}
