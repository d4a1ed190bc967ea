#include "launcher/facts.h"

#include <glob.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/atomic_file.h"

namespace xft::launcher {

const std::vector<std::string> kIsaFlags = {"avx512f", "avx512_bf16", "amx_bf16", "amx_tile",
                                            "avx512_fp16"};

namespace {

constexpr const char* kCpuDir = "/sys/devices/system/cpu/";
constexpr const char* kNodeDir = "/sys/devices/system/node/";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool parse_int(const std::string& text, int& out) {
  std::string t = trim(text);
  if (t.empty()) return false;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc() && ptr == t.data() + t.size();
}

// "/sys/devices/system/cpu/cpu12/topology/core_id" with prefix ".../cpu/cpu" -> 12, rest "topology/core_id".
bool split_indexed(const std::string& path, const std::string& prefix, int& index, std::string& rest) {
  if (path.rfind(prefix, 0) != 0) return false;
  size_t pos = prefix.size();
  size_t end = pos;
  while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
  if (end == pos || end >= path.size() || path[end] != '/') return false;
  index = std::stoi(path.substr(pos, end - pos));
  rest = path.substr(end + 1);
  return true;
}

const std::string* find_file(const FileMap& files, const std::string& path) {
  auto it = files.find(path);
  return it == files.end() ? nullptr : &it->second;
}

// The value after "Key:" on the line that starts with `key` (procfs style).
std::string field_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = trim(line.substr(0, colon));
    if (name == key) return trim(line.substr(colon + 1));
  }
  return "";
}

std::uint64_t parse_kb(const std::string& value) {
  // "12345 kB"
  std::istringstream in(value);
  std::uint64_t kb = 0;
  in >> kb;
  return kb;
}

std::string first_cpuinfo_block(const std::string& text) {
  size_t end = text.find("\n\n");
  return end == std::string::npos ? text : text.substr(0, end);
}

Error file_error(const std::string& origin, const std::string& path, const std::string& what) {
  return make_error(origin + path + ": " + what);
}

}  // namespace

const LogicalCpu* HostFacts::cpu(int id) const {
  for (const auto& c : cpus)
    if (c.id == id) return &c;
  return nullptr;
}

const NumaNode* HostFacts::node(int id) const {
  for (const auto& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

const Nic* HostFacts::nic(const std::string& name) const {
  for (const auto& n : nics)
    if (n.name == name) return &n;
  return nullptr;
}

int HostFacts::package_count() const {
  std::set<int> packages;
  for (const auto& c : cpus)
    if (c.online && c.package >= 0) packages.insert(c.package);
  return static_cast<int>(packages.size());
}

int HostFacts::core_count() const {
  std::set<std::vector<int>> cores;
  for (const auto& c : cpus)
    if (c.online) cores.insert(c.siblings);
  return static_cast<int>(cores.size());
}

Expected<std::vector<int>> parse_cpu_list(const std::string& text) {
  std::vector<int> ids;
  std::string t = trim(text);
  if (t.empty()) return ids;
  std::istringstream in(t);
  std::string part;
  while (std::getline(in, part, ',')) {
    part = trim(part);
    size_t dash = part.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!parse_int(part, lo)) return make_error("bad CPU list \"" + t + "\": \"" + part + "\" is not a number");
      hi = lo;
    } else if (!parse_int(part.substr(0, dash), lo) || !parse_int(part.substr(dash + 1), hi) || hi < lo) {
      return make_error("bad CPU list \"" + t + "\": \"" + part + "\" is not a range a-b");
    }
    for (int i = lo; i <= hi; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string format_cpu_list(const std::vector<int>& unsorted) {
  std::vector<int> ids = unsorted;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

const std::vector<std::string>& efa_libfabric_dirs() {
  static const std::vector<std::string> dirs = {"/opt/amazon/efa/lib64", "/opt/amazon/efa/lib"};
  return dirs;
}

std::string efa_libfabric_probe_shell() {
  std::string dirs;
  for (const auto& d : efa_libfabric_dirs()) dirs += " " + d;
  return std::string("efa=\nfor d in") + dirs +
         "; do\n"
         "  if [ -e \"$r$d/libfabric.so.1\" ]; then efa=$d; break; fi\n"
         "done\n"
         "if [ -n \"$efa\" ]; then\n"
         "  printf '==> %s <==\\n%s\\n' '" + kEfaLibfabricSection + "' \"$efa\"\n"
         "  printf '==> %s <==\\n%s\\n' '" + kLdLibraryPathSection + "' \"${LD_LIBRARY_PATH:-}\"\n"
         "fi\n";
}

std::string efa_library_path(const std::string& efa_dir, const std::string& ld_library_path) {
  if (efa_dir.empty()) return "";
  return ld_library_path.empty() ? efa_dir : efa_dir + ":" + ld_library_path;
}

const std::vector<std::string>& fact_file_patterns() {
  static const std::vector<std::string> patterns = {
      "/sys/devices/system/cpu/online",
      "/sys/devices/system/cpu/present",
      "/sys/devices/system/cpu/cpu[0-9]*/online",
      "/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id",
      "/sys/devices/system/cpu/cpu[0-9]*/topology/die_id",
      "/sys/devices/system/cpu/cpu[0-9]*/topology/core_id",
      "/sys/devices/system/cpu/cpu[0-9]*/topology/core_cpus_list",
      "/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list",
      "/sys/devices/system/node/node[0-9]*/cpulist",
      "/sys/devices/system/node/node[0-9]*/meminfo",
      "/sys/devices/system/node/node[0-9]*/distance",
      "/sys/class/net/*/device/numa_node",
      "/sys/class/infiniband/*/device/numa_node",
      "/sys/fs/cgroup/cpuset.cpus.effective",
      "/proc/self/status",
      "/proc/meminfo",
  };
  return patterns;
}

FileMap read_fact_files(const std::string& root_in) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") root.clear();
  FileMap files;
  auto read_into = [&](const std::string& full) {
    std::ifstream in(full, std::ios::binary);
    if (!in) return;
    std::ostringstream text;
    text << in.rdbuf();
    files[full.substr(root.size())] = text.str();
  };
  for (const auto& pattern : fact_file_patterns()) {
    glob_t g{};
    if (glob((root + pattern).c_str(), 0, nullptr, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) read_into(g.gl_pathv[i]);
    globfree(&g);
  }
  // Only the first processor block matters; the rest repeats it per CPU.
  std::ifstream cpuinfo(root + "/proc/cpuinfo");
  if (cpuinfo) {
    std::string line, block;
    while (std::getline(cpuinfo, line) && !line.empty()) block += line + "\n";
    files["/proc/cpuinfo"] = block;
  }
  // The same sections efa_libfabric_probe_shell() prints; the environment is
  // this process's, whose children the local ranks are.
  for (const auto& dir : efa_libfabric_dirs()) {
    if (!std::filesystem::exists(root + dir + "/libfabric.so.1")) continue;
    const char* ld = std::getenv("LD_LIBRARY_PATH");
    files[kEfaLibfabricSection] = dir + "\n";
    files[kLdLibraryPathSection] = std::string(ld ? ld : "") + "\n";
    break;
  }
  return files;
}

std::string fact_probe_script() {
  std::string globs;
  for (const auto& p : fact_file_patterns()) globs += " " + p;
  // tail -v prints "==> FILE <==" before each file; unreadable or unmatched
  // patterns only produce stderr. LC_ALL=C keeps the headers untranslated.
  return "export LC_ALL=C; tail -v -n +1 --" + globs +
         " 2>/dev/null; echo; echo '==> /proc/cpuinfo <=='; sed '/^$/q' /proc/cpuinfo\nr=\n" +
         efa_libfabric_probe_shell();
}

FileMap parse_fact_dump(const std::string& dump) {
  FileMap files;
  std::istringstream in(dump);
  std::string line, current;
  bool have = false;
  while (std::getline(in, line)) {
    if (line.size() > 8 && line.rfind("==> ", 0) == 0 && line.compare(line.size() - 4, 4, " <==") == 0) {
      current = line.substr(4, line.size() - 8);
      files[current];
      have = true;
      continue;
    }
    if (have) files[current] += line + "\n";
  }
  return files;
}

namespace {

struct CpuScan {
  std::set<int> ids;
  std::map<int, std::map<std::string, std::string>> attrs;  // cpu -> "topology/core_id" -> text
};

CpuScan scan_cpus(const FileMap& files) {
  CpuScan scan;
  const std::string prefix = std::string(kCpuDir) + "cpu";
  for (const auto& [path, text] : files) {
    int id = 0;
    std::string rest;
    if (!split_indexed(path, prefix, id, rest)) continue;
    scan.ids.insert(id);
    scan.attrs[id][rest] = text;
  }
  return scan;
}

Expected<std::set<int>> optional_list(const FileMap& files, const std::string& path,
                                      const std::string& origin, bool& present) {
  const std::string* text = find_file(files, path);
  present = text != nullptr && !trim(*text).empty();
  if (!present) return std::set<int>{};
  auto ids = parse_cpu_list(*text);
  if (!ids) return file_error(origin, path, ids.error().message);
  return std::set<int>(ids->begin(), ids->end());
}

Expected<void> fill_cpus(const FileMap& files, const std::string& origin, HostFacts& facts) {
  CpuScan scan = scan_cpus(files);
  bool have_present = false, have_online = false;
  auto present = optional_list(files, std::string(kCpuDir) + "present", origin, have_present);
  if (!present) return present.error();
  auto online = optional_list(files, std::string(kCpuDir) + "online", origin, have_online);
  if (!online) return online.error();
  for (int id : *present) scan.ids.insert(id);
  if (scan.ids.empty())
    return make_error(origin + kCpuDir + ": no CPUs found (is --sysfs-root the root of a host tree?)");

  for (int id : scan.ids) {
    LogicalCpu cpu;
    cpu.id = id;
    const auto& attrs = scan.attrs[id];
    auto attr = [&](const std::string& name) -> const std::string* {
      auto it = attrs.find(name);
      return it == attrs.end() ? nullptr : &it->second;
    };
    if (have_online) {
      cpu.online = online->count(id) > 0;
    } else if (const std::string* flag = attr("online")) {
      cpu.online = trim(*flag) != "0";
    }
    std::string where = origin + kCpuDir + "cpu" + std::to_string(id) + "/topology/";
    if (const std::string* v = attr("topology/physical_package_id"); v && !parse_int(*v, cpu.package))
      return make_error(where + "physical_package_id: \"" + trim(*v) + "\" is not a number");
    if (const std::string* v = attr("topology/die_id"); v && !parse_int(*v, cpu.die))
      return make_error(where + "die_id: \"" + trim(*v) + "\" is not a number");
    if (const std::string* v = attr("topology/core_id"); v && !parse_int(*v, cpu.core))
      return make_error(where + "core_id: \"" + trim(*v) + "\" is not a number");
    const std::string* sibs = attr("topology/core_cpus_list");
    if (!sibs) sibs = attr("topology/thread_siblings_list");
    if (sibs) {
      auto list = parse_cpu_list(*sibs);
      if (!list) return make_error(where + "core_cpus_list: " + list.error().message);
      cpu.siblings = *list;
    }
    if (cpu.siblings.empty()) cpu.siblings = {id};
    if (cpu.online && cpu.package < 0) cpu.package = 0;  // very old kernels or odd containers
    facts.cpus.push_back(std::move(cpu));
  }
  return {};
}

// The cgroup cpuset and the affinity of the probing process both restrict
// where ranks may run; either one may be missing.
Expected<void> fill_allowed(const FileMap& files, const std::string& origin, HostFacts& facts) {
  bool have_cpuset = false;
  auto cpuset = optional_list(files, "/sys/fs/cgroup/cpuset.cpus.effective", origin, have_cpuset);
  if (!cpuset) return cpuset.error();
  std::set<int> affinity;
  bool have_affinity = false;
  if (const std::string* status = find_file(files, "/proc/self/status")) {
    std::string value = field_value(*status, "Cpus_allowed_list");
    if (!value.empty()) {
      auto ids = parse_cpu_list(value);
      if (!ids) return file_error(origin, "/proc/self/status", "Cpus_allowed_list: " + ids.error().message);
      affinity.insert(ids->begin(), ids->end());
      have_affinity = true;
    }
  }
  for (auto& cpu : facts.cpus) {
    cpu.allowed = (!have_cpuset || cpuset->count(cpu.id)) && (!have_affinity || affinity.count(cpu.id));
  }
  return {};
}

Expected<void> fill_nodes(const FileMap& files, const std::string& origin, HostFacts& facts) {
  std::map<int, NumaNode> nodes;
  std::map<int, std::string> distance_text;
  const std::string prefix = std::string(kNodeDir) + "node";
  for (const auto& [path, text] : files) {
    int id = 0;
    std::string rest;
    if (!split_indexed(path, prefix, id, rest)) continue;
    NumaNode& node = nodes[id];
    node.id = id;
    if (rest == "cpulist") {
      auto ids = parse_cpu_list(text);
      if (!ids) return file_error(origin, path, ids.error().message);
      node.cpus = *ids;
    } else if (rest == "meminfo") {
      // "Node 0 MemTotal:  123 kB"
      std::istringstream in(text);
      std::string line;
      while (std::getline(in, line)) {
        size_t at = line.find("MemTotal:");
        if (at != std::string::npos) node.memory_kb = parse_kb(line.substr(at + 9));
      }
    } else if (rest == "distance") {
      distance_text[id] = text;
    }
  }
  if (nodes.empty()) {
    // A kernel without NUMA: one node with every CPU and all memory.
    NumaNode node;
    for (const auto& cpu : facts.cpus) node.cpus.push_back(cpu.id);
    node.memory_kb = facts.memory_kb;
    node.distance[0] = 10;
    nodes[0] = node;
  }
  // A node's distance line lists the online nodes in id order.
  std::vector<int> ids;
  for (const auto& [id, node] : nodes) ids.push_back(id);
  for (const auto& [id, text] : distance_text) {
    std::istringstream in(text);
    int d = 0;
    for (size_t i = 0; in >> d; ++i) {
      if (i >= ids.size())
        return file_error(origin, prefix + std::to_string(id) + "/distance",
                          "more entries than NUMA nodes (" + std::to_string(ids.size()) + ")");
      nodes[id].distance[ids[i]] = d;
    }
  }
  for (auto& [id, node] : nodes) {
    for (int c : node.cpus)
      for (auto& cpu : facts.cpus)
        if (cpu.id == c) cpu.numa_node = id;
    facts.nodes.push_back(node);
  }
  for (auto& cpu : facts.cpus)
    if (cpu.numa_node < 0 && cpu.online) cpu.numa_node = facts.nodes.front().id;
  return {};
}

Expected<void> fill_nics(const FileMap& files, const std::string& origin, HostFacts& facts) {
  struct Class {
    const char* prefix;
    const char* kind;
  };
  for (Class cls : {Class{"/sys/class/infiniband/", "infiniband"}, Class{"/sys/class/net/", "net"}}) {
    std::string prefix = cls.prefix;
    for (const auto& [path, text] : files) {
      if (path.rfind(prefix, 0) != 0) continue;
      std::string rest = path.substr(prefix.size());
      size_t slash = rest.find('/');
      if (slash == std::string::npos || rest.substr(slash) != "/device/numa_node") continue;
      Nic nic;
      nic.name = rest.substr(0, slash);
      nic.kind = cls.kind;
      if (!parse_int(text, nic.numa_node)) return file_error(origin, path, "\"" + trim(text) + "\" is not a number");
      facts.nics.push_back(nic);
    }
  }
  return {};
}

void fill_efa(const FileMap& files, HostFacts& facts) {
  if (const std::string* dir = find_file(files, kEfaLibfabricSection)) facts.efa_libfabric_dir = trim(*dir);
  if (facts.efa_libfabric_dir.empty()) return;
  if (const std::string* ld = find_file(files, kLdLibraryPathSection)) facts.ld_library_path = trim(*ld);
}

void fill_proc(const FileMap& files, HostFacts& facts) {
  if (const std::string* meminfo = find_file(files, "/proc/meminfo"))
    facts.memory_kb = parse_kb(field_value(*meminfo, "MemTotal"));
  if (const std::string* cpuinfo = find_file(files, "/proc/cpuinfo")) {
    std::string block = first_cpuinfo_block(*cpuinfo);
    facts.cpu_model = field_value(block, "model name");
    std::istringstream flags(field_value(block, "flags"));
    std::set<std::string> have;
    for (std::string f; flags >> f;) have.insert(f);
    for (const auto& f : kIsaFlags)
      if (have.count(f)) facts.isa.push_back(f);
  }
}

}  // namespace

Expected<HostFacts> parse_facts(const FileMap& files, const std::string& host, const std::string& origin) {
  HostFacts facts;
  facts.host = host;
  fill_proc(files, facts);
  if (auto r = fill_cpus(files, origin, facts); !r) return r.error();
  if (auto r = fill_allowed(files, origin, facts); !r) return r.error();
  if (auto r = fill_nodes(files, origin, facts); !r) return r.error();
  if (auto r = fill_nics(files, origin, facts); !r) return r.error();
  fill_efa(files, facts);
  return facts;
}

std::string utc_now_iso8601() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Expected<HostFacts> probe_local_facts(const std::string& root, const std::string& host) {
  std::string origin = (root.empty() || root == "/") ? "" : root;
  while (!origin.empty() && origin.back() == '/') origin.pop_back();
  auto facts = parse_facts(read_fact_files(root), host, origin);
  if (facts) facts->probed_at = utc_now_iso8601();
  return facts;
}

nlohmann::json facts_to_json(const HostFacts& f) {
  using nlohmann::json;
  json cpus = json::array();
  for (const auto& c : f.cpus)
    cpus.push_back({{"id", c.id}, {"package", c.package}, {"die", c.die}, {"core", c.core},
                    {"siblings", c.siblings}, {"numa_node", c.numa_node}, {"online", c.online},
                    {"allowed", c.allowed}});
  json nodes = json::array();
  for (const auto& n : f.nodes) {
    json distance = json::object();
    for (const auto& [to, d] : n.distance) distance[std::to_string(to)] = d;
    nodes.push_back({{"id", n.id}, {"cpus", format_cpu_list(n.cpus)}, {"memory_kb", n.memory_kb},
                     {"has_memory", n.has_memory()}, {"distance", distance}});
  }
  json nics = json::array();
  for (const auto& n : f.nics) nics.push_back({{"name", n.name}, {"kind", n.kind}, {"numa_node", n.numa_node}});
  return {{"host", f.host}, {"probed_at", f.probed_at}, {"cpu_model", f.cpu_model}, {"isa", f.isa},
          {"memory_kb", f.memory_kb}, {"packages", f.package_count()}, {"cores", f.core_count()},
          {"cpus", cpus}, {"numa_nodes", nodes}, {"nics", nics},
          {"efa_libfabric_dir", f.efa_libfabric_dir}, {"ld_library_path", f.ld_library_path}};
}

Expected<HostFacts> facts_from_json(const nlohmann::json& j, const std::string& origin) {
  try {
    HostFacts f;
    f.host = j.at("host").get<std::string>();
    f.probed_at = j.at("probed_at").get<std::string>();
    f.cpu_model = j.at("cpu_model").get<std::string>();
    f.isa = j.at("isa").get<std::vector<std::string>>();
    f.memory_kb = j.at("memory_kb").get<std::uint64_t>();
    for (const auto& c : j.at("cpus")) {
      LogicalCpu cpu;
      cpu.id = c.at("id");
      cpu.package = c.at("package");
      cpu.die = c.at("die");
      cpu.core = c.at("core");
      cpu.siblings = c.at("siblings").get<std::vector<int>>();
      cpu.numa_node = c.at("numa_node");
      cpu.online = c.at("online");
      cpu.allowed = c.at("allowed");
      f.cpus.push_back(cpu);
    }
    for (const auto& n : j.at("numa_nodes")) {
      NumaNode node;
      node.id = n.at("id");
      auto cpus = parse_cpu_list(n.at("cpus").get<std::string>());
      if (!cpus) return make_error(origin + ": numa_nodes.cpus: " + cpus.error().message);
      node.cpus = *cpus;
      node.memory_kb = n.at("memory_kb");
      for (const auto& [to, d] : n.at("distance").items()) node.distance[std::stoi(to)] = d.get<int>();
      f.nodes.push_back(node);
    }
    for (const auto& n : j.at("nics")) f.nics.push_back({n.at("name"), n.at("kind"), n.at("numa_node")});
    // Absent in files of xftctl before EFA detection: load_cached_facts re-probes those.
    f.efa_libfabric_dir = j.value("efa_libfabric_dir", "");
    f.ld_library_path = j.value("ld_library_path", "");
    return f;
  } catch (const std::exception& e) {
    return make_error(origin + ": not a facts cache file (" + e.what() + "); delete it or run with --refresh");
  }
}

std::string facts_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/xftctl/facts";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/root") + "/.cache/xftctl/facts";
}

Expected<HostFacts> load_cached_facts(const std::string& dir, const std::string& host) {
  std::string path = dir + "/" + host + ".json";
  auto text = read_file(path);
  if (!text) return text.error();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded())
    return make_error(path + ": not valid JSON; delete it or run with --refresh");
  // An older xftctl did not look for EFA's libfabric: "none" there is unknown.
  if (j.is_object() && !j.contains("efa_libfabric_dir"))
    return make_error(path + ": written before EFA's libfabric was probed; re-probing the host");
  return facts_from_json(j, path);
}

Expected<void> save_cached_facts(const std::string& dir, const HostFacts& facts) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(dir + ": cannot create the facts cache directory: " + ec.message());
  return write_file_atomic(dir + "/" + facts.host + ".json", facts_to_json(facts).dump(2) + "\n");
}

}  // namespace xft::launcher
