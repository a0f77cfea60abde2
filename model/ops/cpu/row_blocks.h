// Walks rows [0, m) in blocks of the sizes given, largest first: fn(rows, first_row) with `rows`
// a std::integral_constant, so each block size is its own kernel instantiation with its sums in
// registers. Included by the kernel files of every level; static so each keeps its own copy,
// compiled for its own level (packed_kernels.h).
#pragma once

#include <cstdint>
#include <type_traits>

namespace transerve::ops::cpu {

template <int R, int... Smaller, typename Fn>
static inline void ForRowBlocks(int64_t m, const Fn& fn, int64_t first = 0) {
  for (; first + R <= m; first += R) fn(std::integral_constant<int, R>{}, first);
  if constexpr (sizeof...(Smaller) > 0) ForRowBlocks<Smaller...>(m, fn, first);
}

}  // namespace transerve::ops::cpu
