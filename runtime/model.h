// The GPT model zbrun trains: configuration, how its layers are split over virtual stages, and the
// deterministic initialisation. Token + position embedding, L pre-LN transformer blocks (causal
// multi-head attention, GELU MLP), final LayerNorm, LM head (not tied), cross-entropy.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/partition.h"  // LayerCosts, Partition

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

/// The built-in models: tiny (the default above), small (6 layers, C=384, T=128, ~11 M parameters)
/// and c256 (8 layers, C=256, T=64, vocab 512: the model of tools/gpu_checks.sh).
constexpr const char* kGptPresets = "tiny, small, c256";
std::optional<GptConfig> gpt_preset(const std::string& name);
/// A preset's name, or a JSON file {"vocab":..,"seq":..,"channels":..,"heads":..,"layers":..,"batch":..}.
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

/// The blocks per virtual stage that a schedule file's partition (core/partition.h) gives this model:
/// its layers must be the model's embedding, blocks and head, in that order, and, when the file names
/// a model, this one. Empty string with *blocks filled when they are, else why not.
std::string blocks_of_partition(const LayerCosts& costs, const Partition& partition, const GptConfig& config,
                                std::vector<int>* blocks);

/// The parameter tensors of a transformer block, in their global order.
enum BlockTensor { LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB, LN2W, LN2B, FCW, FCB, FCPROJW, FCPROJB, kBlockTensors };

/// A parameter tensor's place in the whole model, so every partition initialises, orders and
/// reduces it the same way: 0 wte, 1 wpe, then 12 per block, then lnf weight, lnf bias, lm head.
int global_tensor_id_block(int block, int k);
/// The id of the final LayerNorm's weight, the first of the head's three tensors.
int global_tensor_id_head(const GptConfig& config);
int global_tensor_count(const GptConfig& config);
/// A tensor's name as PyTorch's GPT-2 would spell it ("h3.attn.qkv.w", "lm_head.w") and its shape,
/// row-major, weights as [out, in] like nn.Linear: what dumps of tensors are labelled with.
std::string tensor_name(const GptConfig& config, int id);
std::vector<long> tensor_shape(const GptConfig& config, int id);

/// Floating-point operations (2 per multiply-add) of the linear layers in one F of virtual stage
/// `vs` for one microbatch: its blocks and, on the last, the LM head. B and W each do one GEMM of the
/// same size per linear layer, so the figure is theirs too. Attention's score and value products
/// (about 2 batch·seq²·channels per block for F, twice that for B, none in W) are not counted.
double gemm_flops(const GptConfig& config, int vs, int total_vs);

/// How one parameter tensor starts: its global id and size, and a constant or N(0, std_dev).
struct TensorSpec {
  int id = 0;
  long size = 0;
  float std_dev = 0, constant = 0;
  bool use_constant = false;
};

/// The parameter tensors virtual stage `vs` of `total_vs` holds, in global order: the one table
/// every backend builds its parameters from, so all of them start from the same weights.
std::vector<TensorSpec> stage_tensors(const GptConfig& config, int vs, int total_vs);

/// Fills in where a backend's chunk sits: its virtual stage, whether it embeds or ends with the
/// head, its blocks (empty, one per block it runs, for stage_tensors to fill via tensor_field).
template <class ChunkT>
void place_chunk(ChunkT* chunk, int vs, int total_vs, const LayerSplit& split) {
  chunk->vs = vs;
  chunk->embed = vs == 0;
  chunk->head = vs == total_vs - 1;
  chunk->first = split.first[vs];
  chunk->count = split.count[vs];
  chunk->blocks.resize(chunk->count);
}

/// The stash of activation slot `slot` in a backend's chunk (its `slots`), made on first use.
template <class ChunkT>
auto& slot_stash(ChunkT& chunk, int slot) {
  if (slot < 0) throw std::runtime_error("op has no activation slot (is the schedule lowered?)");
  if (static_cast<int>(chunk.slots.size()) <= slot) chunk.slots.resize(slot + 1);
  return chunk.slots[slot];
}

/// A slot about to be read for microbatch `mb` must hold it (else slots were reused before W).
inline void check_slot(int held_mb, int mb, int slot) {
  if (held_mb != mb)
    throw std::runtime_error("slot " + std::to_string(slot) + " holds microbatch " + std::to_string(held_mb) +
                             ", not " + std::to_string(mb) + " (slots reused before W?)");
}

/// The field of a backend's chunk that holds tensor `id` (the chunk has wte, wpe, lnfw, lnfb, lmw,
/// blocks[i][k] and `first`, its first block).
template <class ChunkT>
auto* tensor_field(ChunkT& chunk, int id, const GptConfig& config) {
  const int head = global_tensor_id_head(config);
  if (id == 0) return &chunk.wte;
  if (id == 1) return &chunk.wpe;
  if (id == head) return &chunk.lnfw;
  if (id == head + 1) return &chunk.lnfb;
  if (id == head + 2) return &chunk.lmw;
  return &chunk.blocks[(id - 2) / kBlockTensors - chunk.first][(id - 2) % kBlockTensors];
}

/// Fills `values` with the tensor's deterministic initial values (depends on seed and id only).
void init_tensor(std::vector<float>* values, std::uint64_t seed, int global_id, float std_dev, float constant,
                 bool use_constant);

}  // namespace zbpp
