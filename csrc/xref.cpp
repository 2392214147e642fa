// Blocked cross-reference kernel; see xref.h for the contract.
//
// Layout (GotoBLAS-style): A and B are normalised once into packed float32 panels
// (A: MR rows interleaved per k, B: NR rows interleaved per k), so the micro-kernel
// streams contiguous memory. Work items are (session, block of MC rows, column range);
// each item loops NC-column blocks x KC-deep slices, accumulates an MC x NC tile in a
// thread-local buffer and folds it into the running max/argmax before moving on.
// In a ragged batch, a small session (one work item) is packed by its own work item just
// before use, so many small sessions never need batch-sized packing buffers.
#include "xref.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define PROMEM_X86 1
#include <immintrin.h>
#endif

namespace promem {
namespace {

constexpr int64_t MR = 6;    // rows per micro-tile (6 x 16 = 12 ymm accumulators)
constexpr int64_t NR = 16;   // columns per micro-tile (two 8-float vectors)
#ifndef PROMEM_KC
#define PROMEM_KC 256
#endif
#ifndef PROMEM_MC
#define PROMEM_MC 96
#endif
#ifndef PROMEM_NC
#define PROMEM_NC 256
#endif
constexpr int64_t KC = PROMEM_KC;  // depth slice: A panel 6 KB + B panel 16 KB stay in L1
constexpr int64_t MC = PROMEM_MC;  // rows per work item (16 A panels, ~96 KB per slice, L2)
constexpr int64_t NC = PROMEM_NC;  // columns per tile buffer (MC x NC floats = 96 KB)
// (Block sizes are macros only so experiments can rebuild with -DPROMEM_MC=...; MC % MR == 0, NC % NR == 0.)
constexpr int64_t kMinFmaPerThread = 1 << 20;  // below this a thread costs more than it saves
// A batch's session whose rows fit one work item and whose packed B is at most this many
// floats (1 MB) is packed by that work item right before use (cache-hot, no big buffers).
constexpr int64_t kLocalMaxFloats = 1 << 18;

// ---------------------------------------------------------------- aligned buffers
struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
};
using FloatBuf = std::unique_ptr<float, FreeDeleter>;

FloatBuf alloc_floats(int64_t count) {
    size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes);
    if (!p) throw std::bad_alloc();
    return FloatBuf(static_cast<float*>(p));
}

// Packing buffers are reused across calls on the same calling thread: fresh allocations
// above glibc's mmap threshold (128 KB) cost a page fault per 4 KB on every call, which
// dominated small problems. Buffers above kArenaMaxFloats are not kept.
constexpr int64_t kArenaMaxFloats = int64_t{1} << 24;  // 64 MB

struct Arena {
    FloatBuf buf;
    int64_t cap = 0;
};

// Returns space for count floats: from the arena when it fits the cap, else in tmp.
float* arena_get(Arena& arena, int64_t count, FloatBuf& tmp) {
    if (count > kArenaMaxFloats) {
        tmp = alloc_floats(count);
        return tmp.get();
    }
    if (count > arena.cap) {
        arena.buf = alloc_floats(count);
        arena.cap = count;
    }
    return arena.buf.get();
}

// ---------------------------------------------------------------- thread pool
template <class F>
void parallel_for(int64_t n_items, int n_threads, F&& fn) {
    if (n_items <= 0) return;
    n_threads = static_cast<int>(std::min<int64_t>(n_threads, n_items));
    if (n_threads <= 1) {
        for (int64_t i = 0; i < n_items; ++i) fn(i, 0);
        return;
    }
    std::atomic<int64_t> next{0};
    auto worker = [&](int tid) {
        for (int64_t i = next.fetch_add(1); i < n_items; i = next.fetch_add(1)) fn(i, tid);
    };
    std::vector<std::thread> pool;
    pool.reserve(n_threads - 1);
    for (int t = 1; t < n_threads; ++t) pool.emplace_back(worker, t);
    worker(0);
    for (auto& th : pool) th.join();
}

// ---------------------------------------------------------------- loading input
float half_to_float(uint16_t h) {
    const uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: renormalise
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) { mant <<= 1; --exp; }
            mant &= 0x3FFu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Copies row r of v into dst (float32, contiguous, length d).
void load_row(const MatView& v, int64_t r, float* dst) {
    if (v.dtype == DType::F32) {
        const float* src = static_cast<const float*>(v.data) + r * v.row_stride;
        if (v.col_stride == 1) {
            std::memcpy(dst, src, sizeof(float) * v.d);
        } else {
            for (int64_t k = 0; k < v.d; ++k) dst[k] = src[k * v.col_stride];
        }
    } else {
        const uint16_t* src = static_cast<const uint16_t*>(v.data) + r * v.row_stride;
        for (int64_t k = 0; k < v.d; ++k) dst[k] = half_to_float(src[k * v.col_stride]);
    }
}

// 1 / ||x|| for a contiguous float row, 0 when the norm is not > 0 (zero row, as in the
// reference). Eight float partial sums vectorise without -ffast-math; the total is double.
float inv_norm(const float* x, int64_t d) {
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t k = 0;
    for (; k + 8 <= d; k += 8)
        for (int j = 0; j < 8; ++j) part[j] += x[k + j] * x[k + j];
    double ss = 0.0;
    for (int j = 0; j < 8; ++j) ss += part[j];
    for (; k < d; ++k) ss += static_cast<double>(x[k]) * x[k];
    const double norm = std::sqrt(ss);
    if (!(norm > 0.0) || !std::isfinite(norm)) return 0.0f;  // zero / non-finite row -> 0
    return static_cast<float>(1.0 / norm);
}

// Writes rows[0:count] (contiguous float rows, each scaled by inv[r]) into panel (d x W,
// k-major); rows count..W-1 and rows with inv[r] == 0 (zero or non-finite norm) become 0.
void pack_rows_generic(const float* const* rows, const float* inv, int64_t count, int64_t W,
                       int64_t d, float* panel) {
    for (int64_t k = 0; k < d; ++k) {
        float* dst = panel + k * W;
        for (int64_t r = 0; r < count; ++r) dst[r] = inv[r] != 0.0f ? rows[r][k] * inv[r] : 0.0f;
        for (int64_t r = count; r < W; ++r) dst[r] = 0.0f;
    }
}

// ---------------------------------------------------------------- micro-kernels
// C[0:MR, 0:NR] (row stride ldc) = (accumulate ? C : 0) + A_panel^T * B_panel over kc.

// Portable kernel (any CPU): GCC/Clang vector extensions, 4 floats wide (SSE2 on x86-64,
// NEON on arm64). The 6 x 16 tile is done as two 6 x 8 halves so the 12 accumulators fit
// in 16 vector registers; the A panel is re-read from L1 for the second half.
typedef float v4f __attribute__((vector_size(16)));

void ukr_generic(int64_t kc, const float* __restrict A, const float* __restrict B,
                 float* __restrict C, int64_t ldc, bool accumulate) {
    for (int64_t half = 0; half < 2; ++half) {
        v4f c[MR][2];
        for (int64_t i = 0; i < MR; ++i)
            for (int64_t v = 0; v < 2; ++v) {
                if (accumulate) {
                    std::memcpy(&c[i][v], C + i * ldc + half * 8 + v * 4, sizeof(v4f));
                } else {
                    c[i][v] = v4f{0.0f, 0.0f, 0.0f, 0.0f};
                }
            }
        const float* b = B + half * 8;
        const float* a = A;
        for (int64_t k = 0; k < kc; ++k, a += MR, b += NR) {
            v4f b0, b1;
            std::memcpy(&b0, b, sizeof(v4f));
            std::memcpy(&b1, b + 4, sizeof(v4f));
            for (int64_t i = 0; i < MR; ++i) {
                const v4f ai = v4f{a[i], a[i], a[i], a[i]};
                c[i][0] += ai * b0;
                c[i][1] += ai * b1;
            }
        }
        for (int64_t i = 0; i < MR; ++i)
            for (int64_t v = 0; v < 2; ++v)
                std::memcpy(C + i * ldc + half * 8 + v * 4, &c[i][v], sizeof(v4f));
    }
}

// Max of row[0:n] and the lowest index reaching it; n >= 1.
inline void row_max_generic(const float* row, int64_t n, float* mx, int64_t* arg) {
    float best = row[0];
    int64_t bj = 0;
    for (int64_t j = 1; j < n; ++j)
        if (row[j] > best) { best = row[j]; bj = j; }
    *mx = best;
    *arg = bj;
}

#if PROMEM_X86
__attribute__((target("avx2,fma"))) void ukr_avx2(int64_t kc, const float* __restrict A,
                                                  const float* __restrict B,
                                                  float* __restrict C, int64_t ldc,
                                                  bool accumulate) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (accumulate) {
        c00 = _mm256_loadu_ps(C + 0 * ldc); c01 = _mm256_loadu_ps(C + 0 * ldc + 8);
        c10 = _mm256_loadu_ps(C + 1 * ldc); c11 = _mm256_loadu_ps(C + 1 * ldc + 8);
        c20 = _mm256_loadu_ps(C + 2 * ldc); c21 = _mm256_loadu_ps(C + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(C + 3 * ldc); c31 = _mm256_loadu_ps(C + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(C + 4 * ldc); c41 = _mm256_loadu_ps(C + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(C + 5 * ldc); c51 = _mm256_loadu_ps(C + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 =
            _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < kc; ++k) {
        // A's micro-panel streams from L2; fetch ~32 steps ahead (measured: ~5-8% at d >= 1024).
        _mm_prefetch(reinterpret_cast<const char*>(A + 32 * MR), _MM_HINT_T0);
        const __m256 b0 = _mm256_load_ps(B);
        const __m256 b1 = _mm256_load_ps(B + 8);
        __m256 a;
        a = _mm256_broadcast_ss(A + 0); c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(A + 1); c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(A + 2); c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(A + 3); c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(A + 4); c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(A + 5); c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);
        A += MR;
        B += NR;
    }
    _mm256_storeu_ps(C + 0 * ldc, c00); _mm256_storeu_ps(C + 0 * ldc + 8, c01);
    _mm256_storeu_ps(C + 1 * ldc, c10); _mm256_storeu_ps(C + 1 * ldc + 8, c11);
    _mm256_storeu_ps(C + 2 * ldc, c20); _mm256_storeu_ps(C + 2 * ldc + 8, c21);
    _mm256_storeu_ps(C + 3 * ldc, c30); _mm256_storeu_ps(C + 3 * ldc + 8, c31);
    _mm256_storeu_ps(C + 4 * ldc, c40); _mm256_storeu_ps(C + 4 * ldc + 8, c41);
    _mm256_storeu_ps(C + 5 * ldc, c50); _mm256_storeu_ps(C + 5 * ldc + 8, c51);
}

__attribute__((target("avx2,fma"))) void row_max_avx2(const float* row, int64_t n, float* mx,
                                                      int64_t* arg) {
    if (n < 16) { row_max_generic(row, n, mx, arg); return; }
    // Pass 1: vector max (no index bookkeeping); pass 2: first index equal to it.
    __m256 v0 = _mm256_loadu_ps(row), v1 = _mm256_loadu_ps(row + 8);
    int64_t j = 16;
    for (; j + 16 <= n; j += 16) {
        v0 = _mm256_max_ps(v0, _mm256_loadu_ps(row + j));
        v1 = _mm256_max_ps(v1, _mm256_loadu_ps(row + j + 8));
    }
    v0 = _mm256_max_ps(v0, v1);
    float lanes[8];
    _mm256_storeu_ps(lanes, v0);
    float best = lanes[0];
    for (int t = 1; t < 8; ++t) best = std::max(best, lanes[t]);
    for (; j < n; ++j) best = std::max(best, row[j]);
    int64_t bj = 0;
    while (bj < n && !(row[bj] == best)) ++bj;
    if (bj == n) { row_max_generic(row, n, mx, arg); return; }  // NaN in row: scalar rule
    *mx = best;
    *arg = bj;
}

// Same as pack_rows_generic, transposing 8 rows x 8 k at a time in registers.
__attribute__((target("avx2,fma"))) void pack_rows_avx2(const float* const* rows,
                                                        const float* inv, int64_t count,
                                                        int64_t W, int64_t d, float* panel) {
    const __m256 zero = _mm256_setzero_ps();
    for (int64_t g = 0; g < W; g += 8) {
        const int64_t gw = std::min<int64_t>(8, W - g);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(gw)),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const float* src[8];
        __m256 scale[8];
        bool valid[8];
        for (int i = 0; i < 8; ++i) {
            const int64_t r = g + i;
            valid[i] = i < gw && r < count && inv[r] != 0.0f;
            src[i] = valid[i] ? rows[r] : nullptr;
            scale[i] = _mm256_set1_ps(valid[i] ? inv[r] : 0.0f);
        }
        int64_t k = 0;
        for (; k + 8 <= d; k += 8) {
            __m256 v[8];
            for (int i = 0; i < 8; ++i)
                v[i] = valid[i] ? _mm256_mul_ps(_mm256_loadu_ps(src[i] + k), scale[i]) : zero;
            const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
            const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
            const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
            const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
            const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            __m256 c[8];  // c[j] = element k + j of rows g .. g + 7
            c[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
            c[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
            c[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
            c[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
            c[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
            c[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
            c[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
            c[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
            float* dst = panel + k * W + g;
            if (gw == 8) {
                for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + j * W, c[j]);
            } else {
                // Full 8-wide stores spill gw..7 into the next k's slots, which the next
                // store overwrites (ascending order); only the panel's last k uses the
                // (slow on AMD) masked store so nothing is written past the panel.
                for (int j = 0; j < 8; ++j) {
                    if (k + j + 1 < d) _mm256_storeu_ps(dst + j * W, c[j]);
                    else _mm256_maskstore_ps(dst + j * W, mask, c[j]);
                }
            }
        }
        for (; k < d; ++k)
            for (int64_t i = 0; i < gw; ++i)
                panel[k * W + g + i] = valid[i] ? src[i][k] * inv[g + i] : 0.0f;
    }
}
#endif

using UkrFn = void (*)(int64_t, const float*, const float*, float*, int64_t, bool);
using RowMaxFn = void (*)(const float*, int64_t, float*, int64_t*);
using PackFn = void (*)(const float* const*, const float*, int64_t, int64_t, int64_t, float*);

struct Isa {
    UkrFn ukr;
    RowMaxFn row_max;
    PackFn pack;
    const char* name;
};

const Isa& isa() {
    static const Isa chosen = [] {
#if PROMEM_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            std::getenv("PROMEM_XREF_GENERIC") == nullptr)
            return Isa{ukr_avx2, row_max_avx2, pack_rows_avx2, "avx2_fma"};
#endif
        return Isa{ukr_generic, row_max_generic, pack_rows_generic, "generic"};
    }();
    return chosen;
}

// Packs rows [r0, r0 + count) of v (count <= W) into panel (d x W, k-major), scaled to
// unit L2 norm; zero rows (norm not > 0, as in the reference) and padding rows are 0.
// scratch holds W * d floats, used only when the source is not contiguous float32.
void pack_panel(const MatView& v, int64_t r0, int64_t count, int64_t W, float* panel,
                float* scratch) {
    const int64_t d = v.d;
    const float* rows[NR > MR ? NR : MR];
    float inv[NR > MR ? NR : MR];
    const bool direct = v.dtype == DType::F32 && v.col_stride == 1;
    for (int64_t r = 0; r < count; ++r) {
        if (direct) {
            rows[r] = static_cast<const float*>(v.data) + (r0 + r) * v.row_stride;
        } else {
            load_row(v, r0 + r, scratch + r * d);
            rows[r] = scratch + r * d;
        }
        inv[r] = inv_norm(rows[r], d);
    }
    isa().pack(rows, inv, count, W, d, panel);
}

struct SegPlan {
    bool local;  // packed and computed inside its one work item (small session of a batch)
    int64_t n, m;
    int64_t a_panel0, b_panel0;  // first packed panel of this session
    int64_t row_blocks;          // ceil(n / MC)
    int64_t col_panels;          // ceil(m / NR)
};

struct WorkItem {
    int64_t seg, row_block, split;
};

}  // namespace

const char* kernel_isa() { return isa().name; }

void cross_reference_segments(const MatView& a, const MatView& b, const Segment* segs,
                              int64_t n_segs, float* max_sim, int64_t* argmax,
                              int n_threads) {
    if (a.d != b.d) throw std::invalid_argument("a and b must have the same d");
    const int64_t d = a.d;
    const Isa& k = isa();
    // hardware_concurrency() reads /sys on glibc (microseconds): ask once.
    static const int hw_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (n_threads <= 0) n_threads = hw_threads;

    // Plan: panel offsets per session, total work.
    std::vector<SegPlan> plan(n_segs);
    int64_t a_panels = 0, b_panels = 0, row_blocks = 0, local_items = 0;
    double fmas = 0.0;
    for (int64_t s = 0; s < n_segs; ++s) {
        const Segment& g = segs[s];
        if (g.a_begin < 0 || g.a_end < g.a_begin || g.a_end > a.rows || g.b_begin < 0 ||
            g.b_end < g.b_begin || g.b_end > b.rows)
            throw std::out_of_range("segment offsets out of range");
        SegPlan& p = plan[s];
        p.n = g.a_end - g.a_begin;
        p.m = g.b_end - g.b_begin;
        p.row_blocks = (p.m > 0 && d > 0) ? (p.n + MC - 1) / MC : 0;
        p.col_panels = (p.m + NR - 1) / NR;
        p.local = n_segs > 1 && p.row_blocks == 1 && p.col_panels * NR * d <= kLocalMaxFloats;
        p.a_panel0 = a_panels;
        p.b_panel0 = b_panels;
        if (!p.local) {
            a_panels += (p.n + MR - 1) / MR;
            b_panels += p.col_panels;
            row_blocks += p.row_blocks;
        } else {
            local_items += 1;
        }
        fmas += static_cast<double>(p.n) * p.m * d;
        // Empty B (or d = 0): similarity 0 everywhere by contract / by zero norm.
        for (int64_t i = g.a_begin; i < g.a_end; ++i) {
            max_sim[i] = 0.0f;
            argmax[i] = (p.m > 0) ? 0 : -1;
        }
    }
    if (d == 0 || row_blocks + local_items == 0) return;

    const int threads = static_cast<int>(std::max<double>(
        1.0, std::min<double>(n_threads, fmas / static_cast<double>(kMinFmaPerThread))));

    // Normalise + pack (parallel over panels).
    thread_local Arena arena_a, arena_b, arena_t;
    FloatBuf tmp_a, tmp_b, tmp_t;
    float* const apack = arena_get(arena_a, a_panels * d * MR, tmp_a);
    float* const bpack = arena_get(arena_b, b_panels * d * NR, tmp_b);
    // Scratch rows only for inputs the packer cannot read in place (float16 / strided).
    const bool need_scratch = !(a.dtype == DType::F32 && a.col_stride == 1) ||
                              !(b.dtype == DType::F32 && b.col_stride == 1);
    std::vector<std::vector<float>> scratch(threads);
    if (need_scratch)
        for (auto& v : scratch) v.resize(static_cast<size_t>(NR * d));
    {
        // Flatten (session, panel) so both packings share one pool: panel p >= 0 is A's
        // panel p, p < 0 is B's panel -1 - p. Sessions with nothing to compare are skipped.
        std::vector<std::pair<int64_t, int64_t>> jobs;
        jobs.reserve(a_panels + b_panels);
        for (int64_t s = 0; s < n_segs; ++s) {
            if (plan[s].row_blocks == 0 || plan[s].local) continue;
            for (int64_t p = 0; p < (plan[s].n + MR - 1) / MR; ++p) jobs.emplace_back(s, p);
            for (int64_t p = 0; p < plan[s].col_panels; ++p) jobs.emplace_back(s, -1 - p);
        }
        parallel_for(static_cast<int64_t>(jobs.size()), threads, [&](int64_t j, int tid) {
            const int64_t s = jobs[j].first, p = jobs[j].second;
            if (p >= 0) {
                const int64_t r0 = segs[s].a_begin + p * MR;
                const int64_t cnt = std::min(MR, segs[s].a_end - r0);
                pack_panel(a, r0, cnt, MR, apack + (plan[s].a_panel0 + p) * d * MR,
                           scratch[tid].data());
            } else {
                const int64_t q = -1 - p;
                const int64_t r0 = segs[s].b_begin + q * NR;
                const int64_t cnt = std::min(NR, segs[s].b_end - r0);
                pack_panel(b, r0, cnt, NR, bpack + (plan[s].b_panel0 + q) * d * NR,
                           scratch[tid].data());
            }
        });
    }

    // Split columns too when there are few row blocks per thread (few rows, many columns),
    // so the dynamic schedule can rebalance when a core is busy with other work.
    int64_t splits = 1;
    if (threads > 1 && row_blocks > 0 && row_blocks + local_items < 4 * threads) {
        int64_t max_cp = 0;
        for (const auto& p : plan)
            if (!p.local) max_cp = std::max(max_cp, p.col_panels);
        splits = std::min<int64_t>((4 * threads + row_blocks - 1) / row_blocks,
                                   std::max<int64_t>(1, max_cp / (NC / NR)));
        splits = std::max<int64_t>(splits, 1);
    }
    std::vector<WorkItem> items;
    items.reserve(row_blocks * splits + local_items);
    for (int64_t s = 0; s < n_segs; ++s) {
        if (plan[s].local) {
            items.push_back({s, 0, 0});
            continue;
        }
        for (int64_t rb = 0; rb < plan[s].row_blocks; ++rb)
            for (int64_t sp = 0; sp < splits; ++sp) items.push_back({s, rb, sp});
    }
    // Per-thread packing space for local sessions.
    int64_t local_a = 0, local_b = 0;
    for (const auto& p : plan)
        if (p.local) {
            local_a = std::max(local_a, (p.n + MR - 1) / MR * MR * d);
            local_b = std::max(local_b, p.col_panels * NR * d);
        }
    std::vector<FloatBuf> local_bufs;
    if (local_items > 0)
        for (int t = 0; t < threads; ++t) local_bufs.push_back(alloc_floats(local_a + local_b + 16));

    // Partial results per split; merged in split order so ties keep the lowest column.
    std::vector<float> part_max;
    std::vector<int64_t> part_arg;
    if (splits > 1) {
        part_max.assign(static_cast<size_t>(a.rows * splits), -std::numeric_limits<float>::infinity());
        part_arg.assign(static_cast<size_t>(a.rows * splits), -1);
    }
    // Tile buffers sized to the largest session (small problems allocate little: fresh
    // large allocations cost page faults on every call).
    int64_t max_rows = 0;
    for (const auto& p : plan) max_rows = std::max(max_rows, p.n);
    const int64_t tile_rows = std::min(MC, (max_rows + MR - 1) / MR * MR);
    const int64_t tile_floats = (tile_rows * NC + 15) / 16 * 16;  // keep each tile 64-byte aligned
    float* const tiles = arena_get(arena_t, tile_floats * threads, tmp_t);

    parallel_for(static_cast<int64_t>(items.size()), threads, [&](int64_t it, int tid) {
        const WorkItem w = items[it];
        const SegPlan& p = plan[w.seg];
        const int64_t nsplit = p.local ? 1 : splits;
        const int64_t row0 = w.row_block * MC;  // local row within session
        const int64_t rows = std::min(MC, p.n - row0);
        const int64_t rpanels = (rows + MR - 1) / MR;
        const int64_t cp_per = (p.col_panels + nsplit - 1) / nsplit;
        const int64_t cp0 = std::min(p.col_panels, w.split * cp_per);
        const int64_t cp1 = std::min(p.col_panels, cp0 + cp_per);
        float best[MC];
        int64_t bestj[MC];
        std::fill(best, best + MC, -std::numeric_limits<float>::infinity());
        std::fill(bestj, bestj + MC, int64_t{-1});
        float* tile = tiles + tile_floats * tid;
        const float* abase = apack + (p.a_panel0 + row0 / MR) * d * MR;
        const float* bbase = bpack + p.b_panel0 * d * NR;
        if (p.local) {  // pack this session now, into this thread's buffer
            float* la = local_bufs[tid].get();
            float* lb = la + (local_a + 15) / 16 * 16;
            const Segment& g = segs[w.seg];
            for (int64_t q = 0; q < rpanels; ++q)
                pack_panel(a, g.a_begin + q * MR, std::min(MR, g.a_end - g.a_begin - q * MR), MR,
                           la + q * d * MR, scratch[tid].data());
            for (int64_t q = 0; q < p.col_panels; ++q)
                pack_panel(b, g.b_begin + q * NR, std::min(NR, g.b_end - g.b_begin - q * NR), NR,
                           lb + q * d * NR, scratch[tid].data());
            abase = la;
            bbase = lb;
        }
        for (int64_t jc = cp0; jc < cp1; jc += NC / NR) {
            const int64_t jpanels = std::min(NC / NR, cp1 - jc);
            for (int64_t pc = 0; pc < d; pc += KC) {
                const int64_t kc = std::min(KC, d - pc);
                for (int64_t jr = 0; jr < jpanels; ++jr) {
                    const float* bp = bbase + (jc + jr) * d * NR + pc * NR;
                    for (int64_t ir = 0; ir < rpanels; ++ir) {
                        const float* ap = abase + ir * d * MR + pc * MR;
                        k.ukr(kc, ap, bp, tile + ir * MR * NC + jr * NR, NC, pc > 0);
                    }
                }
            }
            // Fold the tile into the running max; strict '>' keeps the earliest column.
            const int64_t col0 = jc * NR;
            const int64_t ncols = std::min(jpanels * NR, p.m - col0);
            for (int64_t r = 0; r < rows; ++r) {
                float mx;
                int64_t j;
                k.row_max(tile + r * NC, ncols, &mx, &j);
                if (mx > best[r]) { best[r] = mx; bestj[r] = col0 + j; }
            }
        }
        const int64_t g0 = segs[w.seg].a_begin + row0;
        for (int64_t r = 0; r < rows; ++r) {
            if (nsplit > 1) {
                part_max[(g0 + r) * splits + w.split] = best[r];
                part_arg[(g0 + r) * splits + w.split] = bestj[r];
            } else if (bestj[r] >= 0) {
                max_sim[g0 + r] = best[r];
                argmax[g0 + r] = bestj[r];
            }
        }
    });

    if (splits > 1) {
        for (int64_t s = 0; s < n_segs; ++s) {
            if (plan[s].row_blocks == 0 || plan[s].local) continue;
            for (int64_t i = segs[s].a_begin; i < segs[s].a_end; ++i) {
                float bm = -std::numeric_limits<float>::infinity();
                int64_t bj = -1;
                for (int64_t sp = 0; sp < splits; ++sp) {
                    const float v = part_max[i * splits + sp];
                    if (part_arg[i * splits + sp] >= 0 && v > bm) { bm = v; bj = part_arg[i * splits + sp]; }
                }
                if (bj >= 0) { max_sim[i] = bm; argmax[i] = bj; }
            }
        }
    }
}

}  // namespace promem
