// zbrun --dump-weights (see weights_dump.h).
#include "runtime/weights_dump.h"

#include <filesystem>
#include <regex>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/output_file.h"

namespace zbpp {

namespace {

// A file a dump writes: a tensor or the manifest.
bool is_dump_file(const std::string& name) {
  static const std::regex tensor("tensor[0-9]+\\.f32");
  return name == kWeightsManifest || std::regex_match(name, tensor);
}

}  // namespace

std::string check_weights_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return "";
  if (!fs::is_directory(dir, ec)) return dir + " is not a directory";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_dump_file(name))
      return dir + " holds " + name + ", which no --dump-weights wrote: give an empty or new directory, or an earlier "
                 "dump's (its tensors are replaced)";
  }
  if (ec) return dir + ": " + ec.message();
  return "";
}

bool clear_weights_dir(const std::string& dir, std::string* why) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    // Only files: anything else by a dump's name stays, and the write that meets it says so.
    if (!is_dump_file(it->path().filename().string()) || !it->is_regular_file()) continue;
    std::error_code removing;
    if (!fs::remove(it->path(), removing) && removing) {
      *why = "--dump-weights: cannot remove the earlier dump's " + it->path().string() + ": " + removing.message();
      return false;
    }
  }
  if (ec) {
    *why = "--dump-weights: " + dir + ": " + ec.message();
    return false;
  }
  return true;
}

bool write_weights(const std::string& dir, const Compute& compute, std::string* why) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const auto& [id, values] : compute.parameters()) {
    const std::string path = dir + "/tensor" + std::to_string(id) + ".f32";
    const std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    if (!write_file_replacing(path, bytes, why)) {
      *why = "--dump-weights: cannot write " + *why;
      return false;
    }
  }
  return true;
}

bool write_weights_manifest(const std::string& dir, const GptConfig& model, int steps, std::string* why) {
  nlohmann::json tensors = nlohmann::json::array();
  for (int id = 0; id < global_tensor_count(model); ++id)
    tensors.push_back({{"id", id},
                       {"name", tensor_name(model, id)},
                       {"shape", tensor_shape(model, id)},
                       {"file", "tensor" + std::to_string(id) + ".f32"}});
  const nlohmann::json manifest = {{"format", "zbpp-weights-1"},
                                   {"model", model.name},
                                   {"steps", steps},
                                   {"dtype", "float32, little-endian, row-major"},
                                   {"tensors", tensors}};
  if (!write_file_replacing(dir + "/" + kWeightsManifest, manifest.dump(1) + "\n", why)) {
    *why = "--dump-weights: cannot write " + *why;
    return false;
  }
  return true;
}

}  // namespace zbpp
