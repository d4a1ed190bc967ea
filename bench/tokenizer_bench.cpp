// Tokenizer throughput: load time of tokenizer.json and qwen.tiktoken, and
// encode/decode speed on 1 MB of mixed text (English, code, CJK, accents,
// emoji) and on 1 MB of random "words" that defeat the per-piece cache.
// Prints figures; it asserts nothing.
//
//   bench_tokenizer [TOKENIZER_DIR]   (default: <source>/third_party/tokenizer-qwen3)
#include <chrono>
#include <ctime>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "engine/tokenizer/tiktoken.h"
#include "engine/tokenizer/tokenizer.h"

using namespace xft::engine;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string mixed_text(size_t bytes) {
  static const char* const kParagraphs[] = {
      "The quick brown fox jumps over the lazy dog. I'm sure they'll say it's fine.\n",
      "def f(x):\n    return x * 2\n\n\nprint(f(21))  # 42\n",
      "你好，世界！今天天气怎么样？分布式推理使用 eRDMA 网络。\n",
      "Ünïcödé àccénts naïve café — Straße, İstanbul, Ñandú.\n",
      "Emoji 🚀🔥 and symbols ∑∫√ ©® 👨‍👩‍👧‍👦\n",
      "mpirun -n 4 -ppn 1 -hosts 192.168.0.1,192.168.0.2 ./benchmark --size=1048576\n",
      "Привет, мир! Как дела? 한국어 텍스트도 있습니다 こんにちは世界\n",
      "JSON {\"key\": [1, 2, 3], \"nested\": {\"x\": null}}\t\r\n",
  };
  std::string text;
  for (size_t i = 0; text.size() < bytes; ++i) text += kParagraphs[i % std::size(kParagraphs)];
  return text;
}

std::string random_words(size_t bytes) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> letter('a', 'z'), length(1, 12), punct(0, 9);
  std::string text;
  while (text.size() < bytes) {
    for (int n = length(rng); n > 0; --n) text += static_cast<char>(letter(rng));
    text += punct(rng) == 0 ? ". " : " ";
  }
  return text;
}

// Wall-clock and CPU time of one call: on a shared machine the CPU figure is
// the one that says what the code costs.
struct Timing {
  double wall_s, cpu_s;
};
template <class F>
Timing timed(F&& f) {
  const auto wall0 = Clock::now();
  const std::clock_t cpu0 = std::clock();
  f();
  return {seconds_since(wall0), double(std::clock() - cpu0) / CLOCKS_PER_SEC};
}

void measure(const char* label, const Tokenizer& tok, const std::string& text) {
  std::vector<int32_t> ids, again;
  std::string back;
  const Timing cold = timed([&] { ids = tok.encode(text); });
  const Timing warm = timed([&] { again = tok.encode(text); });
  const Timing decode = timed([&] { back = tok.decode(ids); });
  const double mb = text.size() / 1e6;
  std::printf("%-34s %7zu tokens | encode %6.1f MB/s (cpu %6.1f), again %6.1f (cpu %6.1f) | "
              "decode %6.1f MB/s (cpu %6.1f) | round trip %s\n",
              label, ids.size(), mb / cold.wall_s, mb / cold.cpu_s, mb / warm.wall_s, mb / warm.cpu_s,
              mb / decode.wall_s, mb / decode.cpu_s, back == text && again == ids ? "exact" : "DIFFERS");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1] : std::string(XFT_SOURCE_DIR) + "/third_party/tokenizer-qwen3";
  xft::Expected<Tokenizer> tok = xft::make_error("not loaded");
  const Timing load = timed([&] { tok = Tokenizer::load(dir); });
  if (!tok) {
    std::fprintf(stderr, "bench_tokenizer: %s (run scripts/fetch-tokenizer.sh)\n", tok.error().message.c_str());
    return 1;
  }
  std::printf("load tokenizer.json               %.3f s (cpu %.3f s), vocab %d\n", load.wall_s, load.cpu_s,
              tok->vocab_size());

  xft::Expected<std::string> json = xft::read_file(dir + "/tokenizer.json");
  if (!json) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", json.error().message.c_str());
    return 1;
  }
  xft::Expected<std::string> tiktoken = xft::make_error("not converted");
  const Timing convert = timed([&] { tiktoken = tiktoken_from_tokenizer_json(*json); });
  if (!tiktoken) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", tiktoken.error().message.c_str());
    return 1;
  }
  std::printf("tokenizer.json -> qwen.tiktoken   %.3f s (cpu %.3f s)\n", convert.wall_s, convert.cpu_s);
  xft::Expected<Tokenizer> qwen1 = xft::make_error("not loaded");
  const Timing load1 = timed([&] { qwen1 = Tokenizer::from_tiktoken(*tiktoken, "qwen.tiktoken"); });
  if (!qwen1) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", qwen1.error().message.c_str());
    return 1;
  }
  std::printf("load qwen.tiktoken                %.3f s (cpu %.3f s), vocab %d\n", load1.wall_s, load1.cpu_s,
              qwen1->vocab_size());

  const std::string mixed = mixed_text(1 << 20), words = random_words(1 << 20);
  measure("tokenizer.json, 1 MiB mixed text", *tok, mixed);
  measure("tokenizer.json, 1 MiB random words", *tok, words);
  measure("qwen.tiktoken,  1 MiB mixed text", *qwen1, mixed);
  measure("qwen.tiktoken,  1 MiB random words", *qwen1, words);
  return 0;
}
