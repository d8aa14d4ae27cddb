// The GPT model zbrun trains: configuration, how its layers are split over virtual stages, and the
// deterministic initialisation. Token + position embedding, L pre-LN transformer blocks (causal
// multi-head attention, GELU MLP), final LayerNorm, LM head (not tied), cross-entropy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zbpp {

struct GptConfig {
  int vocab = 256;   ///< byte-level tokens
  int seq = 16;      ///< tokens per sequence
  int channels = 32;
  int heads = 4;
  int layers = 4;    ///< transformer blocks
  int batch = 2;     ///< sequences per microbatch
  std::string name = "tiny";
  std::vector<int> split;  ///< blocks per virtual stage; empty: split_layers decides
  int tokens() const { return batch * seq; }
};

/// "tiny", or a JSON file {"vocab":..,"seq":..,"channels":..,"heads":..,"layers":..,"batch":..}.
std::optional<GptConfig> load_gpt_config(const std::string& name_or_file, std::string* err);

/// Which blocks each virtual stage runs. Virtual stage 0 also embeds, the last one also runs the
/// final LayerNorm, LM head and loss, so when blocks do not divide evenly those two get fewer.
struct LayerSplit {
  std::vector<int> first;  ///< [vs] first block
  std::vector<int> count;  ///< [vs] number of blocks
};
LayerSplit split_layers(int layers, int virtual_stages);
/// The model's split: its explicit one when set (see check_layer_split), else split_layers.
LayerSplit layer_split(const GptConfig& config, int virtual_stages);
/// Whether an explicit split fits: one count per virtual stage, none negative, summing to the
/// model's layers. Empty string when it fits, else why not.
std::string check_layer_split(const GptConfig& config, int virtual_stages);

/// A parameter tensor's place in the whole model, so every partition initialises, orders and
/// reduces it the same way: 0 wte, 1 wpe, then 12 per block, then lnf weight, lnf bias, lm head.
int global_tensor_id_block(int block, int k);
int global_tensor_count(const GptConfig& config);

/// Fills `values` with the tensor's deterministic initial values (depends on seed and id only).
void init_tensor(std::vector<float>* values, std::uint64_t seed, int global_id, float std_dev, float constant,
                 bool use_constant);

}  // namespace zbpp
