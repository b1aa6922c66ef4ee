// CUB's reduction operators (<cub/thread/thread_operators.cuh>) for brrr's CPU execution, and the
// libcu++ ones newer CUB code passes instead (cuda::std::plus<>, cuda::maximum<>, cuda::minimum<>).
#pragma once
#include <functional>
#include <type_traits>

namespace cub {

struct Sum {
    template <typename A, typename B>
    auto operator()(const A& a, const B& b) const -> decltype(a + b) { return a + b; }
};
struct Max {  // CUB_MAX: the second where it is greater, so the first of equal values
    template <typename A, typename B>
    std::common_type_t<A, B> operator()(const A& a, const B& b) const { return b > a ? b : a; }
};
struct Min {  // CUB_MIN: the second where it is less
    template <typename A, typename B>
    std::common_type_t<A, B> operator()(const A& a, const B& b) const { return b < a ? b : a; }
};
struct Equality {
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return a == b; }
};
struct Inequality {
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return a != b; }
};

}  // namespace cub

namespace cuda {
// cuda::std is the host's std here: cuda::std::plus<>, cuda::std::max are std's.
namespace std = ::std;

template <typename T = void>
struct maximum {
    T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <>
struct maximum<void> {
    template <typename A, typename B>
    ::std::common_type_t<A, B> operator()(const A& a, const B& b) const { return a < b ? b : a; }
};
template <typename T = void>
struct minimum {
    T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <>
struct minimum<void> {
    template <typename A, typename B>
    ::std::common_type_t<A, B> operator()(const A& a, const B& b) const { return b < a ? b : a; }
};
}  // namespace cuda
