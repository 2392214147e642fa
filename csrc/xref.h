// Cross-reference kernel (ProMem §3.3): for each row of A, the max cosine similarity
// over the rows of B and its argmax. Blocked GEMM-style kernel with the max/argmax
// reduction fused into the tile loop, so the n x m similarity matrix never exists.
#pragma once

#include <cstdint>
#include <cstddef>

namespace promem {

enum class DType { F32 = 0, F16 = 1 };

// A strided 2-D view of caller memory (numpy array), rows x d; strides in elements.
struct MatView {
    const void* data;
    DType dtype;
    int64_t rows;
    int64_t d;
    int64_t row_stride;
    int64_t col_stride;
};

// One cross-reference problem of a ragged batch: rows [a_begin, a_end) of A against
// rows [b_begin, b_end) of B. argmax is local to the session (0 .. b_end - b_begin - 1).
struct Segment {
    int64_t a_begin, a_end, b_begin, b_end;
};

// Computes, for every segment s and every row i in it,
//   max_sim[i] = max_j cos(A[i], B[j]) over j in the segment's B rows,
//   argmax[i]  = lowest j (local) reaching that max,
// with cos = 0 where either row is all-zero, and max_sim = 0, argmax = -1 when the
// segment has no B rows. n_threads <= 0 means hardware concurrency.
void cross_reference_segments(const MatView& a, const MatView& b, const Segment* segs,
                              int64_t n_segs, float* max_sim, int64_t* argmax,
                              int n_threads);

// Name of the inner kernel chosen at runtime ("avx2_fma" or "generic").
const char* kernel_isa();

}  // namespace promem
