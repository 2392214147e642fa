// pybind11 bindings: promem_fast._C.cross_reference / cross_reference_batched.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "xref.h"

namespace py = pybind11;
using promem::DType;
using promem::MatView;
using promem::Segment;

namespace {

// Wraps a 2-D float32/float16 numpy array (any strides) without copying.
MatView view_of(const py::array& arr, const char* name) {
    if (arr.ndim() != 2)
        throw py::value_error(std::string(name) + " must be 2-D, got ndim=" + std::to_string(arr.ndim()));
    DType dt;
    const py::dtype dtype = arr.dtype();
    if (dtype.is(py::dtype::of<float>())) {
        dt = DType::F32;
    } else if (dtype.kind() == 'f' && dtype.itemsize() == 2) {
        dt = DType::F16;
    } else {
        throw py::type_error(std::string(name) + " must be float32 or float16, got " +
                             std::string(py::str(dtype)));
    }
    const auto item = arr.itemsize();
    if (arr.strides(0) % item != 0 || arr.strides(1) % item != 0)
        throw py::value_error(std::string(name) + " has strides not a multiple of its item size");
    return MatView{arr.data(), dt, arr.shape(0), arr.shape(1), arr.strides(0) / item,
                   arr.strides(1) / item};
}

std::vector<Segment> segments_of(const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& a_off,
                                 const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& b_off,
                                 int64_t a_rows, int64_t b_rows) {
    if (a_off.ndim() != 1 || b_off.ndim() != 1 || a_off.size() != b_off.size() || a_off.size() < 1)
        throw py::value_error("a_offsets and b_offsets must be 1-D of equal length S + 1 >= 1");
    const int64_t S = a_off.size() - 1;
    auto ao = a_off.unchecked<1>();
    auto bo = b_off.unchecked<1>();
    if (ao(0) != 0 || bo(0) != 0 || ao(S) != a_rows || bo(S) != b_rows)
        throw py::value_error("offsets must start at 0 and end at the row counts of a and b");
    std::vector<Segment> segs(S);
    for (int64_t s = 0; s < S; ++s) {
        if (ao(s + 1) < ao(s) || bo(s + 1) < bo(s))
            throw py::value_error("offsets must be non-decreasing (session " + std::to_string(s) + ")");
        segs[s] = Segment{ao(s), ao(s + 1), bo(s), bo(s + 1)};
    }
    return segs;
}

py::tuple run(const py::array& a, const py::array& b, const std::vector<Segment>& segs,
              int n_threads) {
    const MatView av = view_of(a, "a");
    const MatView bv = view_of(b, "b");
    if (av.d != bv.d)
        throw py::value_error("dimension mismatch: a has d=" + std::to_string(av.d) +
                              ", b has d=" + std::to_string(bv.d));
    py::array_t<float> max_sim(av.rows);
    py::array_t<int64_t> argmax(av.rows);
    float* ms = max_sim.mutable_data();
    int64_t* am = argmax.mutable_data();
    {
        py::gil_scoped_release release;  // inputs are kept alive by the caller's references
        promem::cross_reference_segments(av, bv, segs.data(), static_cast<int64_t>(segs.size()),
                                         ms, am, n_threads);
    }
    return py::make_tuple(max_sim, argmax);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
    m.doc() = "promem_fast native kernels (cross-reference: blocked, multi-threaded, fused max/argmax)";
    m.def(
        "cross_reference",
        [](const py::array& a, const py::array& b, int n_threads) {
            const MatView av = view_of(a, "a");
            const MatView bv = view_of(b, "b");
            std::vector<Segment> segs{Segment{0, av.rows, 0, bv.rows}};
            return run(a, b, segs, n_threads);
        },
        py::arg("a"), py::arg("b"), py::arg("n_threads") = 0,
        R"doc(Row-wise max cosine similarity of a (n, d) against b (m, d).

a, b: float32 or float16 arrays, any strides, unnormalised. Returns (max_sim float32 (n,),
argmax int64 (n,)); zero rows have similarity 0; m = 0 gives 0.0 / -1; ties -> lowest index.
n_threads <= 0 uses all hardware threads (small problems run on one thread).)doc");
    m.def(
        "cross_reference_batched",
        [](const py::array& a, const py::array& b,
           const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& a_offsets,
           const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& b_offsets,
           int n_threads) {
            const MatView av = view_of(a, "a");
            const MatView bv = view_of(b, "b");
            auto segs = segments_of(a_offsets, b_offsets, av.rows, bv.rows);
            return run(a, b, segs, n_threads);
        },
        py::arg("a"), py::arg("b"), py::arg("a_offsets"), py::arg("b_offsets"),
        py::arg("n_threads") = 0,
        R"doc(Ragged batch: session s pairs rows a[a_offsets[s]:a_offsets[s+1]] with
b[b_offsets[s]:b_offsets[s+1]]. Offsets are int64 (S + 1,), start at 0, end at the row
counts. Returns (max_sim float32 (sum n_s,), argmax int64 (sum n_s,)); argmax is local to
the session's b rows (-1 where the session has none).)doc");
    m.def("kernel_isa", &promem::kernel_isa, "Inner kernel picked at import: 'avx2_fma' or 'generic'.");
}
