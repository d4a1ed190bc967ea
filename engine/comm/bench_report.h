// Output of `xftctl bench allreduce`: the oneCCL benchmark table (as in the
// XFT demo), the nccl-tests columns, JSON and CSV. Writers stream: a row is
// printed as soon as its size is measured.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/comm/reduce.h"

namespace xft::engine::comm {

struct BenchRecord {
  std::string algorithm;  // "ring", "auto", or a selection string
  DType dtype = DType::f32;
  int ranks = 1;
  size_t bytes = 0;
  size_t count = 0;
  int repetitions = 0;
  double t_min_us = 0, t_max_us = 0, t_avg_us = 0;  // per-rank mean time of one allreduce, over ranks
  double stddev_pct = 0;                            // of the per-rank means, % of t_avg
  double algbw_gbps = 0, busbw_gbps = 0;            // nccl-tests: bytes/t_avg, algbw * 2(n-1)/n
  long wrong = 0;                                   // elements off the fp32 reference, summed over ranks
  double max_err = 0;                               // max |got - ref| / sum|inputs|
  int slowest_rank = 0;
  std::string slowest_host;
  double vs_mpi = NAN;                              // t_avg / MPI_Allreduce's t_avg at this size (--compare)
};

// busbw of nccl-tests for allreduce.
double bus_bandwidth(double algbw, int ranks);

struct BenchHeader {
  int ranks = 1;
  std::string layout;  // "host-a[0,1] host-b[2,3]"
  bool compare = false;
};

class BenchWriter {
 public:
  virtual ~BenchWriter() = default;
  virtual void begin(const BenchHeader& header) = 0;
  virtual void row(const BenchRecord& record) = 0;
  // A "# ..." note (skipped algorithm, tune result); JSON keeps them in "notes".
  virtual void note(const std::string& text) = 0;
  virtual void end() = 0;
};

// format: oneccl | nccl | json | csv; nullptr for anything else.
std::unique_ptr<BenchWriter> make_bench_writer(const std::string& format, std::ostream& out);
bool is_bench_format(const std::string& format);

}  // namespace xft::engine::comm
