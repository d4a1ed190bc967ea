// Prefill projections through oneDNN matmul.
//
// Threading: Debian's libdnnl uses OpenMP. Instead of letting it start an
// OpenMP team next to our pool (two sets of spinning threads on the same
// cores), every pool worker sets its OpenMP thread count to 1 and runs one
// single-threaded matmul on its own slice of output columns. Primitives are
// cached process-wide per shape (m, k, n, strides, types): layers of a model
// share shapes, so a handful of primitives serve the whole model.
//
// Weights: bf16 and f32 are used in place (B = Wᵀ via strides). f16 and int8
// are converted tile by tile (kTileRows output rows) to bf16 in per-thread
// scratch; int8 tiles hold the integers themselves (exact in bf16) and the
// per-row scale is applied to the output columns afterwards. int4 tiles are
// dequantized ((q - z) · s rounded to bf16) in slot order, and x is gathered
// into the same order (quant_int4.h).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "engine/kernels/linear_internal.h"
#include "engine/kernels/ops.h"
#include "engine/kernels/ops_simd.h"
#include "engine/kernels/fp8.h"
#include "engine/kernels/quant_int4.h"

extern "C" void omp_set_num_threads(int n);

namespace xft::engine {
namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;

constexpr int kTileRows = 256;   // f16/int8 rows converted per oneDNN call
constexpr int kColumnAlign = 64;  // per-thread column slices start on multiples of this

dnnl::engine& cpu_engine() {
  static dnnl::engine engine = [] {
    // XFT_ISA=avx2 emulates an AVX2-only machine for oneDNN too; this only
    // takes effect before oneDNN's first primitive, hence here.
    if (active_isa() < Isa::avx512) {
      try {
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
      } catch (const dnnl::error&) {
      }
    }
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

struct ThreadState {
  bool omp_single = false;
  std::unique_ptr<dnnl::stream> stream;
  AlignedBuffer scratchpad;
  AlignedBuffer tile;  // f16/int8 weight tile as bf16
  AlignedBuffer row;   // one f16 row as float
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  if (!state.omp_single) {
    omp_set_num_threads(1);  // before any primitive is created or run on this thread
    state.omp_single = true;
  }
  if (!state.stream) state.stream = std::make_unique<dnnl::stream>(cpu_engine());
  return state;
}

using ShapeKey = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

struct CachedMatmul {
  dnnl::matmul primitive;
  memory::desc src, weights, dst, scratchpad;
};

const CachedMatmul& cached_matmul(dt src_type, dt weight_type, int64_t m, int64_t k, int64_t n,
                                  int64_t lda, int64_t ldb, int64_t ldc) {
  static std::mutex mutex;
  static std::map<ShapeKey, std::unique_ptr<CachedMatmul>> cache;
  const ShapeKey key{static_cast<int>(src_type), static_cast<int>(weight_type), m, k, n, lda, ldb, ldc};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  memory::desc src({m, k}, src_type, memory::dims{lda, 1});
  memory::desc weights({k, n}, weight_type, memory::dims{1, ldb});
  memory::desc dst({m, n}, dt::f32, memory::dims{ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::matmul::desc desc(src, weights, dst);
  dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
  auto entry = std::make_unique<CachedMatmul>(
      CachedMatmul{dnnl::matmul(pd), src, weights, dst, pd.scratchpad_desc()});
  return *cache.emplace(key, std::move(entry)).first->second;
}

// y[:, 0:n] (row stride ldc) = a[m][k] (row stride lda) · b, where b's column j
// is the k elements at b + j * ldb.
void run_matmul(ThreadState& ts, dt src_type, dt weight_type, const void* a, int64_t m, int64_t k,
                int64_t lda, const void* b, int64_t n, int64_t ldb, float* y, int64_t ldc) {
  const CachedMatmul& mm = cached_matmul(src_type, weight_type, m, k, n, lda, ldb, ldc);
  dnnl::engine& engine = cpu_engine();
  ts.scratchpad.resize(mm.scratchpad.get_size() + 64);
  memory src(mm.src, engine, const_cast<void*>(a));
  memory weights(mm.weights, engine, const_cast<void*>(b));
  memory dst(mm.dst, engine, y);
  memory scratch(mm.scratchpad, engine, ts.scratchpad.as<void>());
  mm.primitive.execute(*ts.stream, {{DNNL_ARG_SRC, src},
                                    {DNNL_ARG_WEIGHTS, weights},
                                    {DNNL_ARG_DST, dst},
                                    {DNNL_ARG_SCRATCHPAD, scratch}});
  ts.stream->wait();
}

// int8 rows [r0, r0 + rows) row-major: in place, or unpacked from the VNNI
// kernels' tiles into a per-thread copy.
const int8_t* int8_rows(const PackedWeight& w, int r0, int rows) {
  if (!w.int8_tiled) return w.row<int8_t>(r0);
  thread_local std::vector<int8_t> copy;
  copy.resize(static_cast<size_t>(rows) * w.ld);
  int8_unpack_rows(w, r0, rows, copy.data());
  return copy.data();
}

// f16, int8, int4 or fp8 rows [r0, r0 + rows) as bf16 into dst [rows][ld]; row: ld floats of scratch.
void convert_tile(const PackedWeight& w, int r0, int rows, uint16_t* dst, float* row) {
  if (w.format == WeightFormat::int4 || w.format == WeightFormat::fp8) {
    for (int r = 0; r < rows; ++r) {
      if (w.format == WeightFormat::fp8) fp8_dequantize_row(w, r0 + r, row);
      else int4_dequantize_slots(w, r0 + r, row);
      f32_to_bf16(row, dst + static_cast<size_t>(r) * w.ld, w.ld);
    }
    return;
  }
  if (w.format == WeightFormat::f16) {
    for (int r = 0; r < rows; ++r) {
      f16_to_f32(w.row<uint16_t>(r0 + r), row, w.ld);
      f32_to_bf16(row, dst + static_cast<size_t>(r) * w.ld, w.ld);
    }
    return;
  }
  // |q| <= 127 has at most 7 significant bits: its bf16 value is exact.
  const size_t count = static_cast<size_t>(rows) * w.ld;
  const int8_t* src = int8_rows(w, r0, rows);
  if (use_avx512()) {
    int8_to_bf16_avx512(src, dst, count);
  } else {
    for (size_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(static_cast<float>(src[i]));
  }
}

// Any non-f32 rows [r0, r0 + rows) as float into dst [rows][ld] (exact:
// int8 tiles hold the integers, the scale is applied to the output).
void convert_tile_f32(const PackedWeight& w, int r0, int rows, float* dst) {
  const size_t count = static_cast<size_t>(rows) * w.ld;
  if (w.format == WeightFormat::int4) {
    for (int r = 0; r < rows; ++r) int4_dequantize_slots(w, r0 + r, dst + static_cast<size_t>(r) * w.ld);
  } else if (w.format == WeightFormat::fp8) {
    for (int r = 0; r < rows; ++r) fp8_dequantize_row(w, r0 + r, dst + static_cast<size_t>(r) * w.ld);
  } else if (w.format == WeightFormat::bf16) {
    bf16_to_f32(w.row<uint16_t>(r0), dst, count);
  } else if (w.format == WeightFormat::f16) {
    f16_to_f32(w.row<uint16_t>(r0), dst, count);
  } else {
    const int8_t* src = int8_rows(w, r0, rows);
    for (size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(src[i]);
  }
}

void columns_for_thread(int out, int tid, int n_threads, int* begin, int* end) {
  const int per = (out + n_threads - 1) / n_threads;
  const int chunk = (per + kColumnAlign - 1) / kColumnAlign * kColumnAlign;
  *begin = std::min(out, tid * chunk);
  *end = std::min(out, (tid + 1) * chunk);
}

void finish_columns(const PackedWeight& w, int m, float* y, int c0, int c1, bool apply_scales) {
  for (int i = 0; i < m; ++i) {
    float* row = y + static_cast<size_t>(i) * w.out;
    if (apply_scales) {
      for (int c = c0; c < c1; ++c) row[c] *= w.scales[c];
    }
    if (!w.bias.empty()) {
      for (int c = c0; c < c1; ++c) row[c] += w.bias[c];
    }
  }
}

// Without bf16 matmul: weight tiles widened to float, float x, f32 matmul.
bool matmul_f32_tiles(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool) {
  // int4 weights are in slot order: x goes there too (k = ld).
  thread_local AlignedBuffer gathered;
  int64_t k = w.in;
  if (w.format == WeightFormat::int4) {
    gathered.resize(static_cast<size_t>(m) * w.ld * sizeof(float));
    float* xg = gathered.as<float>();
    pool.parallel_for(m, [&](int r0, int r1) {
      for (int r = r0; r < r1; ++r) int4_gather_x(w, x + static_cast<size_t>(r) * w.in, xg + static_cast<size_t>(r) * w.ld);
    });
    x = xg;
    k = w.ld;
  }
  std::atomic<bool> ok{true};
  pool.run([&](int tid, int n_threads) {
    int c0, c1;
    columns_for_thread(w.out, tid, n_threads, &c0, &c1);
    if (c0 >= c1) return;
    try {
      ThreadState& ts = thread_state();
      ts.tile.resize(static_cast<size_t>(kTileRows) * w.ld * sizeof(float));
      for (int t0 = c0; t0 < c1; t0 += kTileRows) {
        const int rows = std::min(kTileRows, c1 - t0);
        convert_tile_f32(w, t0, rows, ts.tile.as<float>());
        run_matmul(ts, dt::f32, dt::f32, x, m, k, k, ts.tile.as<float>(), rows, w.ld, y + t0, w.out);
      }
      finish_columns(w, m, y, c0, c1, w.format == WeightFormat::int8);
    } catch (const dnnl::error&) {
      ok.store(false);
    }
  });
  return ok.load();
}

}  // namespace

bool onednn_bf16_matmul_available() {
  // oneDNN 2.6 has no bf16 matmul below AVX-512 (or when capped to AVX2).
  static const bool available = [] {
    try {
      omp_set_num_threads(1);
      cached_matmul(dt::bf16, dt::bf16, 8, 64, 16, 64, 64, 16);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

bool matmul_onednn(const PackedWeight& w, const float* x, int m, float* y, ThreadPool& pool) {
  const bool f32 = w.format == WeightFormat::f32;
  if (!f32 && !onednn_bf16_matmul_available()) return matmul_f32_tiles(w, x, m, y, pool);
  // Activations: float as they are for f32 weights, else padded bf16 rows.
  thread_local AlignedBuffer staged_x;
  const void* a = x;
  int64_t lda = w.in;
  int64_t k = w.in;
  if (!f32) {
    staged_x.resize(static_cast<size_t>(m) * w.ld * sizeof(uint16_t));
    uint16_t* xb = staged_x.as<uint16_t>();
    pool.parallel_for(m, [&](int r0, int r1) {
      std::vector<float> slots(w.format == WeightFormat::int4 ? w.ld : 0);
      for (int r = r0; r < r1; ++r) {
        uint16_t* dst = xb + static_cast<size_t>(r) * w.ld;
        if (w.format == WeightFormat::int4) {
          int4_gather_x(w, x + static_cast<size_t>(r) * w.in, slots.data());
          f32_to_bf16(slots.data(), dst, w.ld);
          continue;
        }
        f32_to_bf16(x + static_cast<size_t>(r) * w.in, dst, w.in);
        std::memset(dst + w.in, 0, sizeof(uint16_t) * (w.ld - w.in));
      }
    });
    a = xb;
    lda = w.ld;
    k = w.ld;
  }
  std::atomic<bool> ok{true};
  pool.run([&](int tid, int n_threads) {
    int c0, c1;
    columns_for_thread(w.out, tid, n_threads, &c0, &c1);
    if (c0 >= c1) return;
    try {
      ThreadState& ts = thread_state();
      if (f32) {
        run_matmul(ts, dt::f32, dt::f32, a, m, k, lda, w.row<float>(c0), c1 - c0, w.ld, y + c0, w.out);
      } else if (w.format == WeightFormat::bf16) {
        run_matmul(ts, dt::bf16, dt::bf16, a, m, k, lda, w.row<uint16_t>(c0), c1 - c0, w.ld, y + c0,
                   w.out);
      } else {
        ts.tile.resize(static_cast<size_t>(kTileRows) * w.ld * sizeof(uint16_t));
        ts.row.resize(static_cast<size_t>(w.ld) * sizeof(float));
        for (int t0 = c0; t0 < c1; t0 += kTileRows) {
          const int rows = std::min(kTileRows, c1 - t0);
          convert_tile(w, t0, rows, ts.tile.as<uint16_t>(), ts.row.as<float>());
          run_matmul(ts, dt::bf16, dt::bf16, a, m, k, lda, ts.tile.as<uint16_t>(), rows, w.ld,
                     y + t0, w.out);
        }
      }
      finish_columns(w, m, y, c0, c1, w.format == WeightFormat::int8);
    } catch (const dnnl::error&) {
      ok.store(false);
    }
  });
  return ok.load();
}

}  // namespace xft::engine
