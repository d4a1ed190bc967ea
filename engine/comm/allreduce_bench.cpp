#include "engine/comm/allreduce_bench.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "engine/comm/mpi_communicator.h"
#include "engine/comm/progress.h"
#include "engine/comm/tune_table.h"

namespace xft::engine::comm {

namespace {

struct Entry {
  std::string label;
  Selection selection;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What rank `rank` contributes at `index` once stored in `dtype`.
double stored_value(int rank, size_t index, uint64_t salt, DType dtype) {
  float v = check_value(rank, index, salt);
  return dtype == DType::f32 ? double(v) : double(bf16_to_f32(f32_to_bf16(v)));
}

double element(const void* data, size_t i, DType dtype) {
  return dtype == DType::f32 ? double(static_cast<const float*>(data)[i])
                             : double(bf16_to_f32(static_cast<const uint16_t*>(data)[i]));
}

void fill_input(void* data, size_t count, DType dtype, int rank, uint64_t salt) {
  if (dtype == DType::f32) {
    auto* p = static_cast<float*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = check_value(rank, i, salt);
  } else {
    auto* p = static_cast<uint16_t*>(data);
    for (size_t i = 0; i < count; ++i) p[i] = f32_to_bf16(check_value(rank, i, salt));
  }
}

struct Verdict {
  long wrong = 0;        // summed over ranks
  double max_err = 0;    // max over ranks, relative to sum |inputs|
  bool ranks_agree = true;
};

// Compares the allreduce result with the fp32 (double-accumulated) sum of
// what every rank put in. The bound allows one rounding per reduction step:
// n * eps * sum|x| (eps 2^-23 for fp32, 2^-8 for bf16).
Verdict verify(MPI_Comm comm, int ranks, const void* data, size_t count, DType dtype, uint64_t salt) {
  const double eps = dtype == DType::f32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -8);
  long wrong = 0;
  double max_err = 0;
  uint64_t hash = 1469598103934665603ull;
  const unsigned char* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < count * dtype_size(dtype); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  for (size_t i = 0; i < count; ++i) {
    double ref = 0, magnitude = 0;
    for (int r = 0; r < ranks; ++r) {
      double v = stored_value(r, i, salt, dtype);
      ref += v;
      magnitude += std::fabs(v);
    }
    double err = std::fabs(element(data, i, dtype) - ref);
    double bound = double(ranks) * eps * magnitude + 1e-30;
    if (!(err <= bound)) ++wrong;  // NaN counts as wrong
    double rel = magnitude > 0 ? err / magnitude : err;
    if (std::isnan(rel)) rel = INFINITY;
    max_err = std::max(max_err, rel);
  }
  Verdict verdict;
  MPI_Allreduce(&wrong, &verdict.wrong, 1, MPI_LONG, MPI_SUM, comm);
  MPI_Allreduce(&max_err, &verdict.max_err, 1, MPI_DOUBLE, MPI_MAX, comm);
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&hash, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&hash, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  verdict.ranks_agree = lo == hi;
  return verdict;
}


Expected<std::vector<Entry>> resolve_entries(Allreducer& allreducer, const std::vector<std::string>& items,
                                             DType dtype, const std::string& tune_file, bool mpi_first,
                                             std::vector<std::string>& notes) {
  std::vector<Entry> entries;
  auto add_all = [&] {
    for (Algorithm algo : all_algorithms()) {
      if (auto ok = allreducer.supports(algo); !ok) {
        notes.push_back(std::string(algorithm_name(algo)) + " skipped: " + ok.error().message);
        continue;
      }
      entries.push_back({algorithm_name(algo), Selection(algo)});
    }
  };
  if (items.empty()) add_all();
  for (const auto& item : items) {
    if (item == "all") {
      add_all();
      continue;
    }
    std::string source;
    auto selection = resolve_backend(allreducer, item, dtype, tune_file, &source);
    if (!selection) return make_error("--algo " + item + ": " + selection.error().message);
    if (item == "auto")
      notes.push_back(std::string("auto (") + dtype_name(dtype) + ") = " + selection->str() + " [" + source + "]");
    entries.push_back({item, *selection});
  }
  if (mpi_first) {
    auto it = std::find_if(entries.begin(), entries.end(), [](const Entry& e) { return e.label == "mpi"; });
    Entry mpi = it != entries.end() ? *it : Entry{"mpi", Selection(Algorithm::mpi)};
    if (it != entries.end()) entries.erase(it);
    entries.insert(entries.begin(), mpi);
  }
  return entries;
}

void maybe_fail(const BenchConfig& config, int rank, size_t bytes) {
  if (rank != config.fail_rank || bytes != config.fail_at_bytes) return;
  std::fprintf(stderr, "rank %d: failure injected at %zu bytes (%s)\n", rank, bytes, config.fail_mode.c_str());
  std::fflush(stderr);
  if (config.fail_mode == "hang") raise(SIGSTOP);
  else raise(SIGKILL);
}

int adaptive_warmup(size_t bytes) {
  return int(std::clamp<size_t>((size_t(8) << 20) / std::max<size_t>(bytes, 1), 5, 50));
}

struct Timing {
  int repetitions = 0;
  std::vector<double> per_rank_us;  // rank 0 only
};

Expected<Timing> time_case(Allreducer& allreducer, const Selection& selection, void* data, size_t count,
                           DType dtype, const BenchConfig& config) {
  MPI_Comm comm = allreducer.comm();
  const size_t bytes = count * dtype_size(dtype);
  std::memset(data, 0, bytes);  // zeros stay zeros: no overflow, no denormals over many repetitions
  int warmup = config.warmup >= 0 ? config.warmup : adaptive_warmup(bytes);
  std::vector<double> warm_times;
  for (int i = 0; i < warmup; ++i) {
    double start = now_s();
    if (auto ok = allreducer.allreduce(selection, data, count, dtype); !ok) return ok.error();
    warm_times.push_back(now_s() - start);
    note_step_done();
  }
  // The median warm-up call: one preempted call must not decide the count.
  double warm_each = 0;
  if (!warm_times.empty()) {
    std::nth_element(warm_times.begin(), warm_times.begin() + warm_times.size() / 2, warm_times.end());
    warm_each = warm_times[warm_times.size() / 2];
  }
  int repetitions = config.iters;
  if (repetitions <= 0) {
    // About 50 ms per size, judged by the slowest rank's warm-up, same count everywhere.
    double slowest = 0;
    MPI_Allreduce(&warm_each, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    repetitions = slowest > 0 ? int(std::clamp(0.05 / slowest, 5.0, 5000.0)) : 100;
  }
  MPI_Barrier(comm);
  double t0 = now_s();
  for (int i = 0; i < repetitions; ++i) {
    if (auto ok = allreducer.allreduce(selection, data, count, dtype); !ok) return ok.error();
    note_step_done();
  }
  double mine = (now_s() - t0) / repetitions * 1e6;
  Timing timing;
  timing.repetitions = repetitions;
  int rank = allreducer.layout().world_rank;
  if (rank == 0) timing.per_rank_us.resize(size_t(allreducer.layout().world_size));
  MPI_Gather(&mine, 1, MPI_DOUBLE, timing.per_rank_us.data(), 1, MPI_DOUBLE, 0, comm);
  return timing;
}

BenchRecord make_record(const Entry& entry, DType dtype, size_t count, const Timing& timing,
                        const Verdict& verdict, const NodeLayout& layout) {
  BenchRecord r;
  r.algorithm = entry.label;
  r.dtype = dtype;
  r.ranks = layout.world_size;
  r.count = count;
  r.bytes = count * dtype_size(dtype);
  r.repetitions = timing.repetitions;
  const auto& t = timing.per_rank_us;
  r.t_min_us = *std::min_element(t.begin(), t.end());
  r.t_max_us = *std::max_element(t.begin(), t.end());
  double sum = 0;
  for (double v : t) sum += v;
  r.t_avg_us = sum / double(t.size());
  double var = 0;
  for (double v : t) var += (v - r.t_avg_us) * (v - r.t_avg_us);
  r.stddev_pct = r.t_avg_us > 0 ? std::sqrt(var / double(t.size())) / r.t_avg_us * 100.0 : 0;
  r.algbw_gbps = r.t_avg_us > 0 ? double(r.bytes) / r.t_avg_us / 1e3 : 0;
  r.busbw_gbps = bus_bandwidth(r.algbw_gbps, r.ranks);
  r.wrong = verdict.wrong;
  r.max_err = verdict.max_err;
  r.slowest_rank = int(std::max_element(t.begin(), t.end()) - t.begin());
  r.slowest_host = layout.hostnames[size_t(r.slowest_rank)];
  return r;
}

// Best algorithm per size, MPI_Allreduce kept unless another beats it by more than noise (3%).
Selection tuned_selection(const std::vector<size_t>& sizes,
                          const std::map<std::pair<std::string, size_t>, double>& t_avg) {
  std::vector<Algorithm> best;
  for (size_t bytes : sizes) {
    Algorithm choice = Algorithm::mpi;
    auto mpi = t_avg.find({"mpi", bytes});
    double choice_time = mpi != t_avg.end() ? mpi->second * 0.97 : INFINITY;
    for (Algorithm algo : all_algorithms()) {
      auto it = t_avg.find({algorithm_name(algo), bytes});
      if (it != t_avg.end() && it->second < choice_time) {
        choice = algo;
        choice_time = it->second;
      }
    }
    best.push_back(choice);
  }
  return selection_from_measurements(sizes, best);
}

std::string activity(const std::string& label, DType dtype, size_t bytes) {
  return label + " " + dtype_name(dtype) + " " + std::to_string(bytes) + " B";
}

}  // namespace

float check_value(int rank, size_t index, uint64_t salt) {
  uint64_t x = mix((uint64_t(uint32_t(rank)) << 40) ^ uint64_t(index) ^ (salt << 56) ^ (salt * 0x51ed27ull));
  return float(double(x >> 40) / double(1ull << 23) - 1.0);
}

std::vector<size_t> size_sweep(size_t min_bytes, size_t max_bytes, double factor) {
  std::vector<size_t> sizes;
  if (factor <= 1.0) factor = 2.0;
  for (double b = double(std::max<size_t>(min_bytes, 1)); b <= double(max_bytes) * (1 + 1e-9); b *= factor) {
    size_t bytes = size_t(std::llround(b));
    if (sizes.empty() || bytes != sizes.back()) sizes.push_back(bytes);
  }
  return sizes;
}

Expected<BenchOutcome> run_allreduce_bench(Allreducer& allreducer, const BenchConfig& config,
                                           std::ostream& out, Watchdog* watchdog) {
  const NodeLayout& layout = allreducer.layout();
  const bool root = layout.world_rank == 0;
  auto writer = make_bench_writer(config.format, out);
  if (!writer) return make_error("unknown --format '" + config.format + "' (use oneccl, nccl, json or csv)");
  if (root) writer->begin({layout.world_size, layout.describe(), config.compare});

  BenchOutcome outcome;
  const std::string tune_path = config.tune_file.empty() ? default_tune_path() : config.tune_file;
  std::vector<char> buffer;
  for (DType dtype : config.dtypes) {
    std::vector<std::string> notes;
    std::vector<std::string> items = config.algos;
    if (config.tune && !items.empty()) items.insert(items.begin(), "mpi");
    auto entries = resolve_entries(allreducer, items, dtype, config.tune_file, config.compare || config.tune, notes);
    if (!entries) return entries.error();
    if (root)
      for (const auto& note : notes) writer->note(note);

    std::vector<size_t> measured_sizes;
    std::map<std::pair<std::string, size_t>, double> t_avg;  // (label, bytes) -> us, rank 0
    for (const Entry& entry : *entries) {
      for (size_t requested : config.sizes) {
        size_t count = std::max<size_t>(1, requested / dtype_size(dtype));
        size_t bytes = count * dtype_size(dtype);
        if (buffer.size() < bytes) buffer.resize(bytes);
        if (watchdog) watchdog->set_activity(activity(entry.label, dtype, bytes));
        maybe_fail(config, layout.world_rank, requested);

        uint64_t salt = bytes;
        fill_input(buffer.data(), count, dtype, layout.world_rank, salt);
        // A failed rank returns at once; its caller reports and aborts the job,
        // which also ends the peers.
        auto done = allreducer.allreduce(entry.selection, buffer.data(), count, dtype);
        if (!done) return done.error();
        Verdict verdict = verify(allreducer.comm(), layout.world_size, buffer.data(), count, dtype, salt);
        auto timing = time_case(allreducer, entry.selection, buffer.data(), count, dtype, config);
        if (!timing) return timing.error();
        outcome.wrong += verdict.wrong;
        ++outcome.rows;
        if (!root) continue;
        BenchRecord record = make_record(entry, dtype, count, *timing, verdict, layout);
        t_avg[{entry.label, bytes}] = record.t_avg_us;
        if (config.compare) {
          auto mpi = t_avg.find({"mpi", bytes});
          if (mpi != t_avg.end() && mpi->second > 0) record.vs_mpi = record.t_avg_us / mpi->second;
        }
        if (&entry == &entries->front()) measured_sizes.push_back(bytes);
        writer->row(record);
      }
    }
    if (config.tune) {
      int failed = 0;
      std::string message;
      if (root) {
        Selection tuned = tuned_selection(measured_sizes, t_avg);
        auto saved = save_tuned_selection(tune_path, layout.key(), layout.describe(), dtype, tuned.str());
        if (saved) {
          writer->note(std::string("tuned ") + dtype_name(dtype) + " for '" + layout.key() + "': " + tuned.str());
          writer->note("saved to " + tune_path + " (used by --algo auto and the engine's auto backend)");
        } else {
          failed = 1;
          message = saved.error().message;
        }
      }
      MPI_Bcast(&failed, 1, MPI_INT, 0, allreducer.comm());
      if (failed) return make_error(root ? message : "rank 0 could not save the tune table");
    }
  }
  if (root) writer->end();
  return outcome;
}

namespace {

std::vector<size_t> default_check_counts(DType dtype, const ShmOptions& shm) {
  std::vector<size_t> counts{1,   2,    3,    4,    5,    7,    8,    9,     15,    16,    17,
                             31,  32,   33,   63,   64,   65,   100,  127,   128,   129,   255,
                             256, 257,  1000, 1023, 1024, 1025, 4095, 4096,  4097,  8191,  16383,
                             16384, 16385, 65537, 262147};
  // Around the shm path switches: small/large and the chunk size.
  size_t es = dtype_size(dtype);
  for (size_t edge : {shm.small_bytes / es, shm.buffer_bytes / es})
    for (size_t c : {edge - 1, edge, edge + 1}) counts.push_back(c);
  counts.push_back(2 * (shm.buffer_bytes / es) + 3);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

// The engine's Communicator backends: allreduce_sum (fp32 and bf16 payload),
// allgather and broadcast against their definitions.
int check_backends(Allreducer& allreducer, const CheckConfig& config, std::ostream& out) {
  const NodeLayout& layout = allreducer.layout();
  const bool root = layout.world_rank == 0;
  const int n = layout.world_size;
  std::vector<std::string> backends{"mpi", "hier", "auto", "recursive_doubling:0-4096;ring:4097-max"};
  if (allreducer.supports(Algorithm::shm)) backends.insert(backends.begin() + 1, "shm");
  int failures = 0;
  for (const auto& backend : backends) {
    for (bool bf16 : {false, true}) {
      CommBackendOptions options;
      options.backend = backend;
      options.bf16_payload = bf16;
      options.tune_file = config.tune_file;
      auto comm = MpiCommunicator::create(allreducer.comm(), options);
      if (!comm) {
        if (root) out << "check backend " << backend << ": FAILED to create: " << comm.error().message << "\n";
        ++failures;
        continue;
      }
      long bad = 0;
      for (size_t count : {size_t(1), size_t(7), size_t(896), size_t(4097), size_t(8192)}) {
        DType dtype = bf16 ? DType::bf16 : DType::f32;
        std::vector<float> data(count);
        for (size_t i = 0; i < count; ++i) data[i] = float(stored_value(layout.world_rank, i, 99, dtype));
        (*comm)->allreduce_sum(data.data(), count);
        std::vector<uint16_t> as_bf16(count);
        for (size_t i = 0; i < count; ++i) as_bf16[i] = f32_to_bf16(data[i]);
        Verdict v = bf16 ? verify(allreducer.comm(), n, as_bf16.data(), count, DType::bf16, 99)
                         : verify(allreducer.comm(), n, data.data(), count, DType::f32, 99);
        bad += v.wrong + (v.ranks_agree ? 0 : 1);
      }
      // allgather: block r holds 37 bytes of value r+1.
      std::vector<unsigned char> mine(37, (unsigned char)(layout.world_rank + 1)), all(37 * size_t(n));
      (*comm)->allgather(mine.data(), mine.size(), all.data());
      for (size_t i = 0; i < all.size(); ++i) bad += all[i] != (unsigned char)(i / 37 + 1);
      // broadcast from the last rank.
      std::vector<int> values(1000, layout.world_rank == n - 1 ? 4242 : -1);
      (*comm)->broadcast(values.data(), values.size() * sizeof(int), n - 1);
      for (int v : values) bad += v != 4242;
      (*comm)->barrier();
      long total = 0;
      MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, allreducer.comm());
      if (total) ++failures;
      if (root)
        out << "check backend " << (*comm)->description() << ": "
            << (total ? "FAILED (" + std::to_string(total) + " wrong)" : std::string("ok")) << "\n";
    }
  }
  return failures;
}

}  // namespace

Expected<CheckOutcome> run_allreduce_check(Allreducer& allreducer, const CheckConfig& config,
                                           std::ostream& out, Watchdog* watchdog) {
  const NodeLayout& layout = allreducer.layout();
  const bool root = layout.world_rank == 0;
  CheckOutcome outcome;
  if (root) out << "check: " << layout.world_size << " ranks: " << layout.describe() << "\n";
  std::vector<char> buffer;
  const ShmOptions shm = shm_options_from_env();
  for (DType dtype : config.dtypes) {
    std::vector<std::string> notes;
    auto entries = resolve_entries(allreducer, config.algos, dtype, config.tune_file, false, notes);
    if (!entries) return entries.error();
    if (root)
      for (const auto& note : notes) out << "# " << note << "\n";
    std::vector<size_t> counts = config.counts.empty() ? default_check_counts(dtype, shm) : config.counts;
    for (const Entry& entry : *entries) {
      std::string failure;
      for (size_t count : counts) {
        if (buffer.size() < count * dtype_size(dtype)) buffer.resize(count * dtype_size(dtype));
        for (int repeat = 0; repeat < config.repeats; ++repeat) {
          if (watchdog) watchdog->set_activity("check " + activity(entry.label, dtype, count * dtype_size(dtype)));
          uint64_t salt = count * 31 + uint64_t(repeat);
          fill_input(buffer.data(), count, dtype, layout.world_rank, salt);
          auto done = allreducer.allreduce(entry.selection, buffer.data(), count, dtype);
          if (!done) return done.error();
          Verdict v = verify(allreducer.comm(), layout.world_size, buffer.data(), count, dtype, salt);
          ++outcome.cases;
          if ((v.wrong || !v.ranks_agree) && failure.empty()) {
            char text[200];
            std::snprintf(text, sizeof text, "count %zu (call %d): %ld wrong, max_err %.2e%s", count, repeat + 1,
                          v.wrong, v.max_err, v.ranks_agree ? "" : ", ranks disagree");
            failure = text;
          }
          if (v.wrong || !v.ranks_agree) ++outcome.failures;
        }
      }
      if (root)
        out << "check " << entry.label << " " << dtype_name(dtype) << ": " << counts.size() << " sizes x "
            << config.repeats << " calls: " << (failure.empty() ? "ok" : "FAILED at " + failure) << "\n";
    }
  }
  if (config.backends) {
    if (watchdog) watchdog->set_activity("check backends");
    outcome.failures += check_backends(allreducer, config, out);
  }
  if (root)
    out << "check: " << (outcome.failures ? "FAILED" : "all correct") << " (" << outcome.cases << " cases, "
        << outcome.failures << " failures, " << layout.world_size << " ranks)\n";
  out.flush();
  return outcome;
}

}  // namespace xft::engine::comm
