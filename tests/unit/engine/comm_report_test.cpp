// The bench output formats parse with their documented column names.
#include "engine/comm/bench_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/comm/allreduce_bench.h"

namespace {

using namespace xft::engine::comm;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

BenchRecord record(const std::string& algo, size_t bytes, double t_avg, double vs_mpi = NAN) {
  BenchRecord r;
  r.algorithm = algo;
  r.dtype = DType::f32;
  r.ranks = 4;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.repetitions = 100;
  r.t_min_us = t_avg - 1;
  r.t_avg_us = t_avg;
  r.t_max_us = t_avg + 2;
  r.stddev_pct = 1.5;
  r.algbw_gbps = double(bytes) / t_avg / 1e3;
  r.busbw_gbps = bus_bandwidth(r.algbw_gbps, 4);
  r.wrong = bytes == 64 ? 3 : 0;
  r.max_err = 1.25e-7;
  r.slowest_rank = 2;
  r.slowest_host = "node-b";
  r.vs_mpi = vs_mpi;
  return r;
}

std::string render(const std::string& format, bool compare) {
  std::ostringstream out;
  auto writer = make_bench_writer(format, out);
  writer->begin({4, "node-a[0,1] node-b[2,3]", compare});
  writer->row(record("mpi", 32, 10.0, 1.0));
  writer->row(record("mpi", 64, 20.0, 1.0));
  writer->row(record("ring", 32, 5.0, 0.5));
  writer->row(record("ring", 64, 40.0, 2.0));
  writer->end();
  return out.str();
}

TEST(CommReport, BusBandwidthIsNcclTestsFormula) {
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 2), 10.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 4), 15.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth(10.0, 1), 0.0);
}

TEST(CommReport, OnecclTableHasTheDemoColumns) {
  for (bool compare : {false, true}) {
    auto text = lines(render("oneccl", compare));
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header;
    int tables = 0;
    for (const auto& l : text) {
      auto w = words(l);
      if (!w.empty() && w[0] == "#bytes") {
        header = w;
        ++tables;
      } else if (!w.empty() && w[0] != "#" && w[0][0] != '#') {
        rows.push_back(w);
      }
    }
    EXPECT_EQ(tables, 2);
    std::vector<std::string> expected{"#bytes", "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]",
                                      "stddev[%]", "#wrong", "max_err", "slowest"};
    if (compare) expected.push_back("vs_mpi");
    EXPECT_EQ(header, expected);
    ASSERT_EQ(rows.size(), 4u);
    for (const auto& r : rows) EXPECT_EQ(r.size(), expected.size());
    EXPECT_EQ(rows[1][0], "64");
    EXPECT_EQ(rows[1][1], "100");
    EXPECT_EQ(rows[1][2], "19.00");
    EXPECT_EQ(rows[1][3], "22.00");
    EXPECT_EQ(rows[1][4], "20.00");
    EXPECT_EQ(rows[1][5], "1.50");
    EXPECT_EQ(rows[1][6], "3");
    EXPECT_EQ(rows[1][8], "2@node-b");
    if (compare) {
      EXPECT_EQ(rows[3][9], "2.00");
    }
    // The block header names the process count as the oneCCL benchmark does.
    bool processes = false;
    for (const auto& l : text) processes = processes || l == "# #processes: 4";
    EXPECT_TRUE(processes);
  }
}

TEST(CommReport, NcclTableHasTheNcclTestsColumns) {
  auto text = lines(render("nccl", true));
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  for (const auto& l : text) {
    auto w = words(l);
    if (w.size() > 1 && w[0] == "#" && w[1] == "size") header = w;
    else if (!w.empty() && w[0][0] != '#') rows.push_back(w);
  }
  // As in nccl-tests, "#" stands apart from "size".
  std::vector<std::string> expected{"#", "size", "count", "type", "redop", "root", "time", "algbw",
                                    "busbw", "#wrong", "max_err", "slowest", "vs_mpi"};
  EXPECT_EQ(header, expected);
  ASSERT_EQ(rows.size(), 4u);
  // 32 bytes of float: 8 elements, "float", "sum", root -1, time 10 us.
  EXPECT_EQ(rows[0], (std::vector<std::string>{"32", "8", "float", "sum", "-1", "10.00", "0.00", "0.00", "0",
                                               "1.25e-07", "2@node-b", "1.00"}));
  EXPECT_EQ(rows[2][5], "5.00");  // rows have no "#": column i of a row is header word i+1
  EXPECT_EQ(rows[2][11], "0.50");
}

TEST(CommReport, JsonHasOneRecordPerAlgorithmAndSize) {
  auto doc = nlohmann::json::parse(render("json", true));
  ASSERT_TRUE(doc.is_array());
  ASSERT_EQ(doc.size(), 4u);
  for (const char* key : {"algorithm", "bytes", "dtype", "ranks", "t_min_us", "t_avg_us", "t_max_us",
                          "algbw_gbps", "busbw_gbps", "wrong", "max_err", "slowest_rank", "slowest_host"})
    EXPECT_TRUE(doc[0].contains(key)) << key;
  EXPECT_EQ(doc[3]["algorithm"], "ring");
  EXPECT_EQ(doc[3]["bytes"], 64);
  EXPECT_EQ(doc[3]["dtype"], "float32");
  EXPECT_EQ(doc[3]["ranks"], 4);
  EXPECT_DOUBLE_EQ(doc[3]["t_avg_us"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(doc[3]["busbw_gbps"].get<double>(), 64.0 / 40.0 / 1e3 * 1.5);
  EXPECT_EQ(doc[1]["wrong"], 3);
  EXPECT_DOUBLE_EQ(doc[3]["vs_mpi"].get<double>(), 2.0);
}

TEST(CommReport, CsvHasAHeaderAndOneRowPerRecord) {
  auto text = lines(render("csv", false));
  ASSERT_EQ(text.size(), 5u);
  EXPECT_EQ(text[0],
            "algorithm,dtype,ranks,bytes,count,repetitions,t_min_us,t_max_us,t_avg_us,stddev_pct,algbw_gbps,"
            "busbw_gbps,wrong,max_err,slowest_rank,slowest_host,vs_mpi");
  EXPECT_EQ(text[4], "\"ring\",float32,4,64,16,100,39.000,42.000,40.000,1.50,0.0016,0.0024,3,1.250e-07,2,node-b,2.0000");
}

TEST(CommReport, UnknownFormatIsRejected) {
  std::ostringstream out;
  EXPECT_EQ(make_bench_writer("xml", out), nullptr);
  EXPECT_FALSE(is_bench_format("xml"));
  EXPECT_TRUE(is_bench_format("nccl"));
}

TEST(CommBench, SizeSweepDoublesFromMinToMax) {
  EXPECT_EQ(size_sweep(8, 64, 2), (std::vector<size_t>{8, 16, 32, 64}));
  EXPECT_EQ(size_sweep(8, 100, 2), (std::vector<size_t>{8, 16, 32, 64}));
  EXPECT_EQ(size_sweep(1000, 1000, 2), (std::vector<size_t>{1000}));
  EXPECT_EQ(size_sweep(8, size_t(64) << 20, 2).size(), 24u);
  EXPECT_EQ(size_sweep(1, 100, 10), (std::vector<size_t>{1, 10, 100}));
}

TEST(CommBench, CheckValuesAreDeterministicAndSpread) {
  EXPECT_EQ(check_value(1, 5, 3), check_value(1, 5, 3));
  EXPECT_NE(check_value(1, 5, 3), check_value(2, 5, 3));
  EXPECT_NE(check_value(1, 5, 3), check_value(1, 6, 3));
  double lo = 1, hi = -1;
  for (size_t i = 0; i < 10000; ++i) {
    float v = check_value(0, i, 0);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    lo = std::min(lo, double(v));
    hi = std::max(hi, double(v));
  }
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 0.99);
}

}  // namespace
