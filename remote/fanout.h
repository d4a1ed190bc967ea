// Runs one function per host on a bounded pool of threads (like ninja's -j
// or clush's fanout), and hands the results back in input order.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace xft::remote {

constexpr int kDefaultFanout = 64;

// Calls task(i) for every i in [0, count) on at most `width` threads (at
// least 1) and returns when all are done. An exception thrown by a task is
// rethrown here, after the others have finished.
void run_bounded(std::size_t count, int width, const std::function<void(std::size_t)>& task);

// task(item) for every item, results in the order of `items`.
template <class Item, class Task>
auto fan_out(const std::vector<Item>& items, int width, Task&& task)
    -> std::vector<std::invoke_result_t<Task&, const Item&>> {
  using Result = std::invoke_result_t<Task&, const Item&>;
  std::vector<std::optional<Result>> slots(items.size());
  run_bounded(items.size(), width, [&](std::size_t i) { slots[i].emplace(task(items[i])); });
  std::vector<Result> results;
  results.reserve(items.size());
  for (auto& slot : slots) results.push_back(std::move(*slot));
  return results;
}

}  // namespace xft::remote
