// A Hugging Face checkpoint directory as a WeightSource: every shard is
// memory-mapped and its header validated up front; reads copy only the
// requested rows/columns out of the mapping, so a tensor-parallel rank pages
// in roughly its own share of the file.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <type_traits>
#include <unordered_map>

#include "common/atomic_file.h"
#include "engine/checkpoint/layout.h"
#include "engine/checkpoint/safetensors.h"
#include "engine/checkpoint/slicing.h"
#include "engine/checkpoint/weights.h"
#include "engine/kernels/fp8.h"

namespace xft::engine {
namespace {

namespace fs = std::filesystem;

class MappedFile {
 public:
  static Expected<std::unique_ptr<MappedFile>> open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return make_error(path + ": missing (no such file)");
      return make_error(path + ": cannot open: " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      int saved = errno;
      ::close(fd);
      return make_error(path + ": cannot stat: " + std::strerror(saved));
    }
    auto file = std::unique_ptr<MappedFile>(new MappedFile(path, uint64_t(st.st_size)));
    if (file->size_ > 0) {
      void* data = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        int saved = errno;
        ::close(fd);
        return make_error(path + ": cannot map: " + std::strerror(saved));
      }
      file->data_ = static_cast<const char*>(data);
    }
    ::close(fd);
    return file;
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
  }
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  const char* data() const { return data_; }
  std::string_view view() const { return {data_ ? data_ : "", size_}; }

 private:
  MappedFile(std::string path, uint64_t size) : path_(std::move(path)), size_(size) {}
  std::string path_;
  uint64_t size_ = 0;
  const char* data_ = nullptr;
};

struct Shard {
  std::unique_ptr<MappedFile> file;
  SafetensorsHeader header;
};

struct Located {
  const Shard* shard;
  const SafetensorsEntry* entry;
};

template <class T>
T convert_element(const char* src, DType dtype);

template <>
float convert_element<float>(const char* src, DType dtype) {
  uint16_t half;
  float value;
  switch (dtype) {
    case DType::f32: std::memcpy(&value, src, 4); return value;
    case DType::bf16: std::memcpy(&half, src, 2); return bf16_bits_to_f32(half);
    case DType::f16: std::memcpy(&half, src, 2); return f16_bits_to_f32(half);
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, src, 4);
      return float(i);
    }
    case DType::f8_e4m3: return e4m3_to_float(static_cast<uint8_t>(*src));
  }
  return 0;
}

template <>
uint16_t convert_element<uint16_t>(const char* src, DType dtype) {
  if (dtype == DType::bf16) {
    uint16_t half;
    std::memcpy(&half, src, 2);
    return half;
  }
  return f32_to_bf16_bits(convert_element<float>(src, dtype));
}

class CheckpointSource final : public WeightSource {
 public:
  CheckpointSource(ModelConfig config, std::vector<std::unique_ptr<Shard>> shards)
      : config_(std::move(config)), shards_(std::move(shards)) {
    for (const auto& shard : shards_) {
      for (const auto& entry : shard->header.tensors) tensors_[entry.meta.name] = {shard.get(), &entry};
    }
  }

  const ModelConfig& config() const override { return config_; }
  bool has(const std::string& name) const override { return tensors_.count(name) != 0; }

  Expected<TensorMeta> meta(const std::string& name) const override {
    auto found = find(name);
    if (!found) return found.error();
    return found->entry->meta;
  }

  Expected<std::vector<float>> read_f32(const std::string& name, Slice rows,
                                        Slice cols) const override {
    return read<float>(name, rows, cols);
  }
  Expected<std::vector<uint16_t>> read_bf16(const std::string& name, Slice rows,
                                            Slice cols) const override {
    return read<uint16_t>(name, rows, cols);
  }
  Expected<std::vector<int32_t>> read_i32(const std::string& name, Slice rows,
                                          Slice cols) const override {
    auto found = find(name);
    if (!found) return found.error();
    if (found->entry->meta.dtype != DType::i32) {
      return make_error("tensor " + name + ": dtype " + dtype_name(found->entry->meta.dtype) + ", expected I32");
    }
    return read<int32_t>(name, rows, cols);
  }
  Expected<std::vector<uint8_t>> read_f8(const std::string& name, Slice rows, Slice cols) const override {
    auto found = find(name);
    if (!found) return found.error();
    if (found->entry->meta.dtype != DType::f8_e4m3) {
      return make_error("tensor " + name + ": dtype " + dtype_name(found->entry->meta.dtype) + ", expected F8_E4M3");
    }
    return read<uint8_t>(name, rows, cols);
  }
  uint64_t bytes_read() const override { return bytes_read_.load(); }
  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    names.reserve(tensors_.size());
    for (const auto& [name, located] : tensors_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

  // Names in shard order (for checks that want the file's own view).
  const std::unordered_map<std::string, Located>& tensors() const { return tensors_; }

 private:
  Expected<Located> find(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return make_error("tensor " + name + ": not in the checkpoint");
    return it->second;
  }

  template <class T>
  Expected<std::vector<T>> read(const std::string& name, Slice rows, Slice cols) const {
    auto found = find(name);
    if (!found) return found.error();
    const SafetensorsEntry& entry = *found->entry;
    auto region = resolve_region(name, entry.meta.shape, rows, cols);
    if (!region) return region.error();
    size_t element = dtype_size(entry.meta.dtype);
    const char* base = found->shard->file->data() + found->shard->header.data_start + entry.begin;
    std::vector<T> out(size_t(region->count()));
    size_t next = 0;
    // Stored exactly as requested: copy row segments instead of converting element by element.
    bool same_format = (std::is_same_v<T, uint16_t> && entry.meta.dtype == DType::bf16) ||
                       (std::is_same_v<T, float> && entry.meta.dtype == DType::f32) ||
                       std::is_same_v<T, int32_t> || std::is_same_v<T, uint8_t>;
    for (int64_t r = region->row_begin; r < region->row_end; ++r) {
      const char* src = base + (uint64_t(r) * uint64_t(region->cols) + uint64_t(region->col_begin)) * element;
      if (same_format) {
        std::memcpy(out.data() + next, src, size_t(region->cols_out()) * element);
        next += size_t(region->cols_out());
        continue;
      }
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, uint16_t>) {
        for (int64_t c = 0; c < region->cols_out(); ++c, src += element) {
          out[next++] = convert_element<T>(src, entry.meta.dtype);
        }
      }
    }
    bytes_read_ += out.size() * element;
    return out;
  }

  ModelConfig config_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unordered_map<std::string, Located> tensors_;
  mutable std::atomic<uint64_t> bytes_read_{0};
};

Expected<std::unique_ptr<Shard>> open_shard(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file) return file.error();
  auto header = parse_safetensors_header((*file)->view(), (*file)->size(), path);
  if (!header) return header.error();
  auto shard = std::make_unique<Shard>();
  shard->file = std::move(*file);
  shard->header = std::move(*header);
  return shard;
}

// model.safetensors.index.json: {"weight_map": {tensor name: shard file name}}.
Expected<std::map<std::string, std::string>> read_weight_map(const std::string& index_path) {
  auto text = read_file(index_path);
  if (!text) return text.error();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return make_error(index_path + ": not valid JSON (" + e.what() + ")");
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    return make_error(index_path + ": weight_map: missing or not an object of tensor name -> shard file");
  }
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string()) {
      return make_error(index_path + ": weight_map: " + name + ": expected a shard file name, got " +
                        file.dump());
    }
    std::string shard = file.get<std::string>();
    fs::path shard_path(shard);
    if (shard.empty() || shard_path.is_absolute() ||
        std::any_of(shard_path.begin(), shard_path.end(), [](const fs::path& p) { return p == ".."; })) {
      return make_error(index_path + ": weight_map: " + name + ": shard \"" + shard +
                        "\" must be a file name inside the model directory");
    }
    weight_map[name] = shard;
  }
  return weight_map;
}

Expected<std::vector<std::unique_ptr<Shard>>> open_sharded(const std::string& dir,
                                                           const std::string& index_path) {
  auto weight_map = read_weight_map(index_path);
  if (!weight_map) return weight_map.error();
  std::map<std::string, size_t> shard_index;
  std::vector<std::unique_ptr<Shard>> shards;
  for (const auto& [name, file] : *weight_map) {
    if (shard_index.count(file)) continue;
    auto shard = open_shard(dir + "/" + file);
    if (!shard) return shard.error();
    shard_index[file] = shards.size();
    shards.push_back(std::move(*shard));
  }
  for (const auto& [name, file] : *weight_map) {
    const auto& tensors = shards[shard_index[file]]->header.tensors;
    bool found = std::any_of(tensors.begin(), tensors.end(),
                             [&](const auto& entry) { return entry.meta.name == name; });
    if (!found) {
      return make_error(index_path + ": weight_map puts tensor " + name + " in " + file +
                        ", which has no such tensor");
    }
  }
  return shards;
}

// Every tensor the architecture needs must be there with the shape config.json implies.
Expected<void> check_against_config(const CheckpointSource& source, const std::string& dir,
                                    const std::string& default_file) {
  const ModelConfig& config = source.config();
  for (const auto& expected : expected_tensors(config)) {
    auto it = source.tensors().find(expected.name);
    if (it == source.tensors().end()) {
      return make_error(default_file + ": tensor " + expected.name + ": missing, but config.json (" +
                        config.architecture_name + ", " + std::to_string(config.layers) +
                        " layers) needs it");
    }
    const auto& meta = it->second.entry->meta;
    if (meta.shape != expected.shape) {
      return make_error(it->second.shard->file->path() + ": tensor " + expected.name + ": shape " +
                        shape_text(meta.shape) + ", config.json says " + shape_text(expected.shape));
    }
  }
  return {};
}

}  // namespace

std::string vision_tower_notice(const WeightSource& source, const std::string& model_dir) {
  const std::string prefix = "model.visual.";
  size_t count = 0;
  for (const std::string& name : source.tensor_names()) count += name.starts_with(prefix);
  if (count == 0) return "";
  return model_dir + ": the vision tower's " + std::to_string(count) + " tensors (" + prefix +
         "*) are skipped: only the text model runs, and a request that carries an image gets a 400";
}

Expected<std::unique_ptr<WeightSource>> open_checkpoint(const std::string& model_dir) {
  auto config = load_config(model_dir);
  if (!config) return config.error();
  std::string single = model_dir + "/model.safetensors";
  std::string index = model_dir + "/model.safetensors.index.json";
  std::vector<std::unique_ptr<Shard>> shards;
  std::string described_by;
  if (fs::exists(index)) {
    auto opened = open_sharded(model_dir, index);
    if (!opened) return opened.error();
    shards = std::move(*opened);
    described_by = index;
  } else if (fs::exists(single)) {
    auto shard = open_shard(single);
    if (!shard) return shard.error();
    shards.push_back(std::move(*shard));
    described_by = single;
  } else {
    return make_error(single + ": missing (and no model.safetensors.index.json for a sharded checkpoint)");
  }
  std::map<std::string, std::string> owner;
  for (const auto& shard : shards) {
    for (const auto& entry : shard->header.tensors) {
      auto [it, added] = owner.emplace(entry.meta.name, shard->file->path());
      if (!added) {
        return make_error(shard->file->path() + ": tensor " + entry.meta.name + ": also stored in " +
                          it->second + " (a tensor must live in exactly one shard)");
      }
    }
  }
  auto source = std::make_unique<CheckpointSource>(std::move(*config), std::move(shards));
  auto checked = check_against_config(*source, model_dir, described_by);
  if (!checked) return checked.error();
  return std::unique_ptr<WeightSource>(std::move(source));
}

}  // namespace xft::engine
