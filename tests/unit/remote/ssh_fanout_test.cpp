#include "remote/fanout.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
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
  // Width 64 > 20 items: one thread each, so all 20 calls are in flight at
  // once. Each call waits until every call has started; thread ids are not
  // counted, since a finished thread's id may be given to a new one.
  constexpr int kItems = 20;
  std::vector<int> items(kItems);
  for (int i = 0; i < kItems; ++i) items[i] = i;
  std::mutex mutex;
  std::condition_variable all_started;
  int started = 0;
  std::multiset<int> seen;
  auto results = fan_out(items, 64, [&](const int& i) {
    std::unique_lock lock(mutex);
    seen.insert(i);
    if (++started == kItems) all_started.notify_all();
    all_started.wait_for(lock, std::chrono::seconds(30), [&] { return started == kItems; });
    return started == kItems ? i * i : -1;
  });
  EXPECT_EQ(seen.size(), 20u);
  for (int i = 0; i < kItems; ++i) EXPECT_EQ(seen.count(i), 1u);
  for (int i = 0; i < kItems; ++i) EXPECT_EQ(results[i], i * i) << "item " << i << " ran before every item had started";
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
