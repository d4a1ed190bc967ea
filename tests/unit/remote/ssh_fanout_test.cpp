#include "remote/fanout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace xft::remote {
namespace {

TEST(FanOut, ResultsComeBackInInputOrderWhateverFinishesFirst) {
  std::vector<int> items{5, 1, 4, 2, 3, 0};
  auto results = fan_out(items, 6, [](const int& delay) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * delay));
    return "item" + std::to_string(delay);
  });
  EXPECT_EQ(results, (std::vector<std::string>{"item5", "item1", "item4", "item2", "item3", "item0"}));
}

TEST(FanOut, NeverRunsMoreThanTheWidthAtOnce) {
  std::vector<int> items(40, 0);
  std::atomic<int> running{0};
  std::atomic<int> peak{0};
  fan_out(items, 3, [&](const int&) {
    int now = ++running;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --running;
    return 0;
  });
  EXPECT_EQ(peak.load(), 3);
}

TEST(FanOut, UsesSeveralThreadsAndEveryItemRunsOnce) {
  std::vector<int> items(20);
  for (int i = 0; i < 20; ++i) items[i] = i;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::multiset<int> seen;
  auto results = fan_out(items, 64, [&](const int& i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
    seen.insert(i);
    return i * i;
  });
  EXPECT_EQ(seen.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(seen.count(i), 1u);
  EXPECT_EQ(results[7], 49);
  EXPECT_EQ(threads.size(), 20u);  // width 64 > 20 items: one thread each
}

TEST(FanOut, WidthBelowOneMeansSequential) {
  std::vector<int> items{1, 2, 3};
  std::vector<int> order;
  fan_out(items, 0, [&](const int& i) {
    order.push_back(i);  // unsynchronized on purpose: must be one thread
    return i;
  });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(FanOut, EmptyInputGivesEmptyOutput) {
  std::vector<int> none;
  EXPECT_TRUE(fan_out(none, 8, [](const int& i) { return i; }).empty());
}

TEST(FanOut, AnExceptionIsRethrownAfterTheOthersFinish) {
  std::vector<int> items{0, 1, 2, 3};
  std::atomic<int> finished{0};
  EXPECT_THROW(fan_out(items, 4,
                       [&](const int& i) {
                         if (i == 1) throw std::runtime_error("boom");
                         std::this_thread::sleep_for(std::chrono::milliseconds(20));
                         ++finished;
                         return i;
                       }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
}

}  // namespace
}  // namespace xft::remote
