// GPT configuration, layer split and initialisation (see model.h).
#include "runtime/model.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/spelling.h"

namespace zbpp {

std::optional<GptConfig> gpt_preset(const std::string& name) {
  GptConfig c;  // tiny
  if (name == "small") {  // 10.9 M parameters: trains visibly on a CPU in minutes
    c.seq = 128, c.channels = 384, c.heads = 6, c.layers = 6, c.batch = 4;
  } else if (name == "c256") {  // 6.6 M parameters, tools/gpu_checks.sh's model
    c.vocab = 512, c.seq = 64, c.channels = 256, c.heads = 8, c.layers = 8, c.batch = 4;
  } else if (name != "tiny") {
    return std::nullopt;
  }
  c.name = name;
  return c;
}

std::optional<GptConfig> load_gpt_config(const std::string& name_or_file, std::string* err) {
  if (auto preset = gpt_preset(name_or_file)) return preset;
  GptConfig c;
  // Read and parsed as schedule files are: a directory or unreadable file is refused, and a
  // syntax error is located (file:line:col).
  std::vector<Diag> diags;
  std::string text;
  std::optional<nlohmann::json> parsed;
  if (read_text_file(name_or_file, &text, &diags)) parsed = parse_json_text(text, name_or_file, &diags);
  if (!parsed) {
    // A name that is no file: most likely a preset mistyped.
    const std::string& why = diags.empty() ? "" : diags[0].message;
    if (why.rfind(kCannotOpen, 0) == 0) {
      std::vector<std::string> presets;
      for (std::string rest = kGptPresets; !rest.empty();) {
        const size_t comma = rest.find(", ");
        presets.push_back(rest.substr(0, comma));
        rest = comma == std::string::npos ? "" : rest.substr(comma + 2);
      }
      const std::string closest = closest_name(name_or_file, presets);
      *err = name_or_file + ": not a preset (" + std::string(kGptPresets) +
             (closest.empty() ? "" : "; did you mean '" + closest + "'?") + "), and cannot open it as a model file" +
             why.substr(std::string(kCannotOpen).size());
    } else {
      *err = format_diag(diags[0]);
    }
    return std::nullopt;
  }
  try {
    const nlohmann::json& j = *parsed;
    if (!j.is_object()) {
      *err = name_or_file + ": expected a model object {vocab, seq, channels, heads, layers, batch}";
      return std::nullopt;
    }
    // Upper bounds keep every tensor allocatable; a bigger model belongs on the GPU backend.
    const std::pair<const char*, std::pair<int*, long long>> fields[] = {
        {"vocab", {&c.vocab, 1 << 20}}, {"seq", {&c.seq, 1 << 16}},     {"channels", {&c.channels, 1 << 14}},
        {"heads", {&c.heads, 1 << 10}}, {"layers", {&c.layers, 1 << 12}}, {"batch", {&c.batch, 1 << 16}}};
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool known = false;
      for (const auto& f : fields) known = known || it.key() == f.first;
      if (!known) {
        *err = name_or_file + ": /" + it.key() + ": unknown field (expected vocab, seq, channels, heads, layers, batch)";
        return std::nullopt;
      }
    }
    for (const auto& [key, target] : fields) {
      if (!j.contains(key)) continue;
      const auto& v = j[key];
      auto n = json_integer(v, 1, target.second);
      if (!n) {
        *err = name_or_file + ": /" + key + ": expected an integer 1.." + std::to_string(target.second) + ", got " +
               json_excerpt(v);
        return std::nullopt;
      }
      *target.first = static_cast<int>(*n);
    }
  } catch (const nlohmann::json::exception& e) {
    *err = name_or_file + ": " + e.what();
    return std::nullopt;
  }
  if (static_cast<long long>(c.vocab) * c.channels > (1LL << 28) ||
      static_cast<long long>(c.batch) * c.seq * c.seq * c.heads > (1LL << 28)) {
    *err = name_or_file + ": model too large for the CPU backend (embedding or attention over 2^28 values)";
    return std::nullopt;
  }
  if (c.channels % c.heads != 0) {
    *err = name_or_file + ": channels (" + std::to_string(c.channels) + ") must be a multiple of heads (" +
           std::to_string(c.heads) + ")";
    return std::nullopt;
  }
  c.name = name_or_file;
  return c;
}

LayerSplit split_layers(int layers, int virtual_stages) {
  LayerSplit s;
  int base = layers / virtual_stages, extra = layers % virtual_stages;
  // Middle virtual stages take the extra blocks first; the ends (embedding, loss) take them last.
  std::vector<int> order;
  for (int vs = 1; vs + 1 < virtual_stages; ++vs) order.push_back(vs);
  order.push_back(0);
  if (virtual_stages > 1) order.push_back(virtual_stages - 1);
  s.count.assign(virtual_stages, base);
  for (int k = 0; k < extra; ++k) ++s.count[order[k]];
  int next = 0;
  for (int vs = 0; vs < virtual_stages; ++vs) {
    s.first.push_back(next);
    next += s.count[vs];
  }
  return s;
}

LayerSplit layer_split(const GptConfig& config, int virtual_stages) {
  if (config.split.empty()) return split_layers(config.layers, virtual_stages);
  LayerSplit s;
  int next = 0;
  for (int n : config.split) {
    s.first.push_back(next);
    s.count.push_back(n);
    next += n;
  }
  return s;
}

std::string check_layer_split(const GptConfig& c, int virtual_stages) {
  if (c.split.empty()) return "";
  long long sum = 0;  // the counts come from the command line: no overflow on a long list
  for (int n : c.split) {
    if (n < 0) return "--layer-split: block counts must be non-negative";
    sum += n;
  }
  if (static_cast<int>(c.split.size()) != virtual_stages)
    return "--layer-split gives " + std::to_string(c.split.size()) + " counts, but the schedule has " +
           std::to_string(virtual_stages) + " virtual stages (p x chunks)";
  if (sum != c.layers)
    return "--layer-split sums to " + std::to_string(sum) + " blocks, but the model has " + std::to_string(c.layers);
  return "";
}

std::string blocks_of_partition(const LayerCosts& costs, const Partition& partition, const GptConfig& config,
                                std::vector<int>* blocks) {
  if (!costs.model.empty() && costs.model != config.name)
    return "the schedule was planned from layer costs of model " + shown_text(costs.model) + ", but this run's model is " +
           config.name + ": give --model " + shown_text(costs.model) + ", or plan again with --layers from this model (zbrun "
           "--profile-layers FILE --model " + config.name + ")";
  const int n = static_cast<int>(costs.layers.size());
  bool shaped = n == config.layers + 2 && costs.layers.front().kind == LayerKind::kEmbedding &&
                costs.layers.back().kind == LayerKind::kHead;
  for (int l = 1; shaped && l + 1 < n; ++l) shaped = costs.layers[static_cast<size_t>(l)].kind == LayerKind::kBlock;
  if (!shaped)
    return "the schedule's partition is of " + std::to_string(n) + " layers that are not an embedding, " +
           std::to_string(config.layers) + " blocks and a head, as model " + config.name +
           " has: plan again with --layers from this model (zbrun --profile-layers FILE --model " + config.name + ")";
  blocks->clear();
  const auto firsts = partition.firsts();
  for (size_t vs = 0; vs < partition.counts.size(); ++vs) {
    int count = 0;
    for (int l = firsts[vs]; l < firsts[vs] + partition.counts[vs]; ++l)
      count += costs.layers[static_cast<size_t>(l)].kind == LayerKind::kBlock;
    blocks->push_back(count);
  }
  return "";
}

int global_tensor_id_block(int block, int k) { return 2 + block * kBlockTensors + k; }
int global_tensor_id_head(const GptConfig& c) { return 2 + kBlockTensors * c.layers; }
int global_tensor_count(const GptConfig& c) { return global_tensor_id_head(c) + 3; }

std::string tensor_name(const GptConfig& c, int id) {
  static const char* const block[kBlockTensors] = {"ln1.w",      "ln1.b",     "attn.qkv.w", "attn.qkv.b",
                                                    "attn.proj.w", "attn.proj.b", "ln2.w",      "ln2.b",
                                                    "mlp.fc.w",   "mlp.fc.b",  "mlp.proj.w", "mlp.proj.b"};
  const int head = global_tensor_id_head(c);
  if (id == 0) return "wte";
  if (id == 1) return "wpe";
  if (id == head) return "lnf.w";
  if (id == head + 1) return "lnf.b";
  if (id == head + 2) return "lm_head.w";
  return "h" + std::to_string((id - 2) / kBlockTensors) + "." + block[(id - 2) % kBlockTensors];
}

std::vector<long> tensor_shape(const GptConfig& c, int id) {
  const long C = c.channels;
  const int head = global_tensor_id_head(c);
  if (id == 0 || id == head + 2) return {c.vocab, C};
  if (id == 1) return {c.seq, C};
  if (id >= head) return {C};
  switch ((id - 2) % kBlockTensors) {
    case QKVW: return {3 * C, C};
    case QKVB: return {3 * C};
    case ATTPROJW: return {C, C};
    case FCW: return {4 * C, C};
    case FCB: return {4 * C};
    case FCPROJW: return {C, 4 * C};
    default: return {C};  // LayerNorm weights and biases, the projections' biases
  }
}

double gemm_flops(const GptConfig& config, int vs, int total_vs) {
  const double BT = config.tokens(), C = config.channels;
  // Per block: qkv (C -> 3C), attention projection (C -> C), MLP (C -> 4C -> C): 12 C^2 weights.
  double flops = 2 * BT * 12 * C * C * layer_split(config, total_vs).count[vs];
  if (vs == total_vs - 1) flops += 2 * BT * C * config.vocab;
  return flops;
}

std::vector<TensorSpec> stage_tensors(const GptConfig& config, int vs, int total_vs) {
  const LayerSplit split = layer_split(config, total_vs);
  // GPT-2's initialisation: N(0, 0.02), the residual projections scaled by 1/sqrt(2 layers).
  const float std_dev = 0.02f, proj_std = 0.02f / std::sqrt(2.0f * config.layers);
  std::vector<TensorSpec> out;
  auto size = [&config](int id) {
    long n = 1;
    for (long d : tensor_shape(config, id)) n *= d;
    return n;
  };
  auto normal = [&](int id, float s) { out.push_back({id, size(id), s, 0.0f, false}); };
  auto constant = [&](int id, float v) { out.push_back({id, size(id), 0.0f, v, true}); };
  if (vs == 0) {
    normal(0, std_dev);
    normal(1, std_dev);
  }
  for (int l = split.first[vs]; l < split.first[vs] + split.count[vs]; ++l) {
    auto id = [l](BlockTensor k) { return global_tensor_id_block(l, k); };
    constant(id(LN1W), 1);
    constant(id(LN1B), 0);
    normal(id(QKVW), std_dev);
    constant(id(QKVB), 0);
    normal(id(ATTPROJW), proj_std);
    constant(id(ATTPROJB), 0);
    constant(id(LN2W), 1);
    constant(id(LN2B), 0);
    normal(id(FCW), std_dev);
    constant(id(FCB), 0);
    normal(id(FCPROJW), proj_std);
    constant(id(FCPROJB), 0);
  }
  if (vs == total_vs - 1) {
    const int head = global_tensor_id_head(config);
    constant(head, 1);
    constant(head + 1, 0);
    normal(head + 2, std_dev);
  }
  return out;
}

void init_tensor(std::vector<float>* values, std::uint64_t seed, int global_id, float std_dev, float constant,
                 bool use_constant) {
  if (use_constant) {
    std::fill(values->begin(), values->end(), constant);
    return;
  }
  // splitmix64 seeded by (seed, tensor id), Box-Muller to normals: the same numbers whatever the
  // partition, machine or compiler.
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(global_id) * 0xBF58476D1CE4E5B9ULL;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  auto uniform = [&] { return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0; };
  for (size_t i = 0; i < values->size(); ++i) {
    double r = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform());
    (*values)[i] = static_cast<float>(r * std_dev);
  }
}

}  // namespace zbpp
