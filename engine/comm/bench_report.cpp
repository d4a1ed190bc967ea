#include "engine/comm/bench_report.h"

#include <cstdarg>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

namespace xft::engine::comm {

namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

std::string slowest_text(const BenchRecord& r) {
  return std::to_string(r.slowest_rank) + "@" + r.slowest_host;
}

// nccl-tests names the types after the C types.
const char* nccl_type(DType dtype) { return dtype == DType::f32 ? "float" : "bfloat16"; }

std::string header_line(const BenchHeader& h) {
  return "# xftctl bench allreduce (sum, in place): " + std::to_string(h.ranks) + " ranks: " + h.layout + "\n";
}

// Tables restart their header whenever the algorithm or dtype changes.
class TableWriter : public BenchWriter {
 public:
  explicit TableWriter(std::ostream& out) : out_(out) {}
  void begin(const BenchHeader& header) override {
    header_ = header;
    out_ << header_line(header);
    out_.flush();
  }
  void row(const BenchRecord& r) override {
    if (r.algorithm != last_algorithm_ || r.dtype != last_dtype_) {
      table_header(r);
      last_algorithm_ = r.algorithm;
      last_dtype_ = r.dtype;
    }
    out_ << table_row(r) << "\n";
    out_.flush();
  }
  void note(const std::string& text) override {
    out_ << "# " << text << "\n";
    out_.flush();
  }
  void end() override { out_.flush(); }

 protected:
  virtual void table_header(const BenchRecord& first) = 0;
  virtual std::string table_row(const BenchRecord& r) = 0;
  std::string vs_mpi(const BenchRecord& r) const {
    if (!header_.compare) return "";
    return std::isnan(r.vs_mpi) ? printf_string(" %8s", "-") : printf_string(" %8.2f", r.vs_mpi);
  }

  std::ostream& out_;
  BenchHeader header_;
  std::string last_algorithm_;
  DType last_dtype_ = DType::f32;
};

class OnecclWriter final : public TableWriter {
 public:
  using TableWriter::TableWriter;

 private:
  void table_header(const BenchRecord& first) override {
    out_ << "\n# algorithm: " << first.algorithm << ", dtype: " << dtype_name(first.dtype) << "\n"
         << "#------------------------------------------------------------\n"
         << "# Benchmarking: allreduce\n"
         << "# #processes: " << first.ranks << "\n"
         << "#------------------------------------------------------------\n\n"
         << printf_string("%12s %12s %12s %12s %12s %10s %8s %9s %s", "#bytes", "#repetitions",
                          "t_min[usec]", "t_max[usec]", "t_avg[usec]", "stddev[%]", "#wrong", "max_err",
                          "slowest")
         << (header_.compare ? "   vs_mpi" : "") << "\n";
  }
  std::string table_row(const BenchRecord& r) override {
    // vs_mpi last so the fixed oneCCL columns parse the same with or without --compare;
    // `slowest` has no spaces.
    return printf_string("%12zu %12d %12.2f %12.2f %12.2f %10.2f %8ld %9.2e %s", r.bytes, r.repetitions,
                         r.t_min_us, r.t_max_us, r.t_avg_us, r.stddev_pct, r.wrong, r.max_err,
                         slowest_text(r).c_str()) +
           vs_mpi(r);
  }
};

class NcclWriter final : public TableWriter {
 public:
  using TableWriter::TableWriter;

 private:
  void table_header(const BenchRecord& first) override {
    out_ << "\n# algorithm: " << first.algorithm << "\n"
         << printf_string("#%11s %13s %9s %7s %7s %9s %8s %8s %7s %9s %s", "size", "count", "type", "redop",
                          "root", "time", "algbw", "busbw", "#wrong", "max_err", "slowest")
         << (header_.compare ? "   vs_mpi" : "") << "\n"
         << printf_string("#%11s %13s %9s %7s %7s %9s %8s %8s", "(B)", "(elements)", "", "", "", "(us)",
                          "(GB/s)", "(GB/s)")
         << "\n";
  }
  std::string table_row(const BenchRecord& r) override {
    return printf_string("%12zu %13zu %9s %7s %7d %9.2f %8.2f %8.2f %7ld %9.2e %s", r.bytes, r.count,
                         nccl_type(r.dtype), "sum", -1, r.t_avg_us, r.algbw_gbps, r.busbw_gbps, r.wrong,
                         r.max_err, slowest_text(r).c_str()) +
           vs_mpi(r);
  }
};

class CsvWriter final : public BenchWriter {
 public:
  explicit CsvWriter(std::ostream& out) : out_(out) {}
  void begin(const BenchHeader&) override {
    out_ << "algorithm,dtype,ranks,bytes,count,repetitions,t_min_us,t_max_us,t_avg_us,stddev_pct,"
            "algbw_gbps,busbw_gbps,wrong,max_err,slowest_rank,slowest_host,vs_mpi\n";
    out_.flush();
  }
  void row(const BenchRecord& r) override {
    // Selection strings contain ';' and ':' but never ',' or '"'; quote anyway.
    out_ << '"' << r.algorithm << '"'
         << printf_string(",%s,%d,%zu,%zu,%d,%.3f,%.3f,%.3f,%.2f,%.4f,%.4f,%ld,%.3e,%d,", dtype_name(r.dtype),
                          r.ranks, r.bytes, r.count, r.repetitions, r.t_min_us, r.t_max_us, r.t_avg_us,
                          r.stddev_pct, r.algbw_gbps, r.busbw_gbps, r.wrong, r.max_err, r.slowest_rank)
         << r.slowest_host << "," << (std::isnan(r.vs_mpi) ? "" : printf_string("%.4f", r.vs_mpi)) << "\n";
    out_.flush();
  }
  // Notes would break the CSV grammar: they go to stderr.
  void note(const std::string& text) override { std::cerr << "# " << text << "\n"; }
  void end() override { out_.flush(); }

 private:
  std::ostream& out_;
};

class JsonWriter final : public BenchWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}
  void begin(const BenchHeader&) override {}
  void row(const BenchRecord& r) override {
    nlohmann::json record = {
        {"algorithm", r.algorithm},   {"dtype", dtype_name(r.dtype)}, {"ranks", r.ranks},
        {"bytes", r.bytes},           {"count", r.count},             {"repetitions", r.repetitions},
        {"t_min_us", r.t_min_us},     {"t_avg_us", r.t_avg_us},       {"t_max_us", r.t_max_us},
        {"stddev_pct", r.stddev_pct}, {"algbw_gbps", r.algbw_gbps},   {"busbw_gbps", r.busbw_gbps},
        {"wrong", r.wrong},           {"max_err", r.max_err},         {"slowest_rank", r.slowest_rank},
        {"slowest_host", r.slowest_host}};
    record["vs_mpi"] = std::isnan(r.vs_mpi) ? nlohmann::json(nullptr) : nlohmann::json(r.vs_mpi);
    records_.push_back(std::move(record));
  }
  // The output is a plain list of records: notes go to stderr.
  void note(const std::string& text) override { std::cerr << "# " << text << "\n"; }
  void end() override {
    out_ << records_.dump(2) << "\n";
    out_.flush();
  }

 private:
  std::ostream& out_;
  nlohmann::json records_ = nlohmann::json::array();
};

}  // namespace

double bus_bandwidth(double algbw, int ranks) {
  return ranks > 1 ? algbw * 2.0 * double(ranks - 1) / double(ranks) : 0.0;
}

bool is_bench_format(const std::string& format) {
  return format == "oneccl" || format == "nccl" || format == "json" || format == "csv";
}

std::unique_ptr<BenchWriter> make_bench_writer(const std::string& format, std::ostream& out) {
  if (format == "oneccl") return std::make_unique<OnecclWriter>(out);
  if (format == "nccl") return std::make_unique<NcclWriter>(out);
  if (format == "json") return std::make_unique<JsonWriter>(out);
  if (format == "csv") return std::make_unique<CsvWriter>(out);
  return nullptr;
}

}  // namespace xft::engine::comm
