// Launch audit: every kernel launch of the CUDA backend (runtime/backend/cuda/launch_config.h, the very
// functions kernels_*.cu's launchers call) fits an sm_80 GPU's limits — threads per block, grid
// sizes, static and opt-in dynamic shared memory — for the test shapes and for the corners of the
// model space zbrun accepts (runtime/model.cpp). Needs no GPU and no CUDA toolkit, so it runs in
// every build, sanitizers included.
#include "runtime/backend/cuda/launch_config.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/model.h"

using namespace zbpp;
using namespace zbpp::cuda;

namespace {

struct Shape {
  GptConfig config;
  std::string label;
};

// A model zbrun accepts: written as a model file and read by the loader, so the audit follows
// load_gpt_config's limits (a corner the loader stops accepting fails here, to be updated).
GptConfig accepted(int vocab, int seq, int channels, int heads, int batch) {
  // One file per process: ctest runs the audit's test cases in parallel.
  const std::string path = std::string(ZBPP_TEST_TMP) + "/launch_audit_model." + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{\"vocab\": " << vocab << ", \"seq\": " << seq << ", \"channels\": " << channels
                      << ", \"heads\": " << heads << ", \"layers\": 1, \"batch\": " << batch << "}\n";
  std::string err;
  auto c = load_gpt_config(path, &err);
  std::remove(path.c_str());
  INFO(err);
  REQUIRE(c);
  return *c;
}

// What the CUDA backend launches for one model, with the sizes it passes (a forward, B and W of a
// block and of the head and embedding, the optimizer and the gradient norms over every tensor).
std::vector<LaunchConfig> launches_of(const GptConfig& c) {
  const long BT = c.tokens(), C = c.channels, n = BT * C, rows = 1L * c.batch * c.heads * c.seq;
  std::vector<LaunchConfig> out = {
      encoder_forward_launch(BT, c.channels),
      encoder_dwpe_launch(c.seq, c.channels),
      encoder_dwte_launch(static_cast<int>(std::min<long>(c.vocab, BT))),  // distinct tokens of a microbatch
      layernorm_forward_launch(BT),
      add_layernorm_forward_launch(BT),
      layernorm_backward_input_launch(BT),
      layernorm_dw_partial_launch(c.channels),
      add_partials_launch(c.channels),
      map_launch("add_kernel", n, map_vectorised(n)),
      map_launch("gelu_forward_kernel", 4 * n, map_vectorised(4 * n)),
      map_launch("gelu_backward_kernel", 4 * n, map_vectorised(4 * n)),
      map_launch("add_kernel", n, false),  // the scalar path, taken on misaligned pointers
      attention_forward_launch(c.seq, rows),
      attention_delta_launch(rows),
      attention_dq_launch(c.seq, rows),
      attention_dkv_launch(c.seq, rows),
      crossentropy_launch(BT),
      sum_squares_partial_launch(),
      sum_partials_launch(),
      device_fault_launch(),
  };
  const int hs = c.channels / c.heads;
  if (flash_supports(hs)) {  // what the default variant launches instead of the three above
    out.push_back(flash_forward_launch(c.seq, 1L * c.batch * c.heads, hs));
    out.push_back(flash_backward_launch(1L * c.batch * c.heads, hs));
  }
  for (int oc : {c.channels, 3 * c.channels, 4 * c.channels}) {
    out.push_back(bias_partial_launch(oc));
    out.push_back(add_partials_launch(oc));
  }
  for (const TensorSpec& t : stage_tensors(c, 0, 1)) {
    out.push_back(elementwise_launch("to_bf16_kernel", t.size));
    out.push_back(elementwise_launch("adamw_step_kernel", t.size));
    out.push_back(elementwise_launch("adamw_rollback_kernel", t.size));
  }
  return out;
}

// The sm_80 limits, and that prepare_launch (what launch.cuh runs before each launch) raises the
// dynamic shared memory limit exactly when a launch needs more than 48 KiB.
void check_limits(const LaunchConfig& l) {
  INFO(l.kernel << ": grid " << l.grid.x << "x" << l.grid.y << "x" << l.grid.z << ", block " << l.block.x << "x"
                << l.block.y << "x" << l.block.z << ", shared " << l.static_shared << " static + " << l.dynamic_shared
                << " dynamic bytes");
  CHECK(l.block.x >= 1);
  CHECK(l.block.x * l.block.y * l.block.z <= kMaxThreadsPerBlock);
  CHECK((l.block.x % 32 == 0 || l.block.x == 1));  // whole warps (the reductions shuffle), or one thread
  CHECK(l.grid.x >= 1);
  CHECK(l.grid.x <= kMaxGridX);
  CHECK(l.grid.y <= kMaxGridYZ);
  CHECK(l.grid.z <= kMaxGridYZ);
  CHECK(l.static_shared <= kStaticSharedLimit);
  CHECK(l.static_shared + l.dynamic_shared <= kOptInSharedLimit);
  std::vector<long> raised;
  prepare_launch(l, [&](long bytes) { raised.push_back(bytes); });
  if (l.dynamic_shared > kStaticSharedLimit) {
    CHECK(raised == std::vector<long>{l.dynamic_shared});
  } else {
    CHECK(raised.empty());
  }
}

std::vector<Shape> test_shapes() {
  GptConfig tiny;
  return {{tiny, "tiny"},
          {accepted(300, 80, 96, 4, 1), "vocab 300, seq 80, channels 96, heads 4, batch 1"},
          {accepted(300, 36, 96, 4, 2), "seq 36, batch 2 (72 tokens), channels 96"},
          {accepted(50304, 128, 1536, 12, 32), "the GPU bench model (head 128)"}};
}

// The corners of what load_gpt_config accepts (vocab <= 2^20, seq <= 2^16, channels <= 2^14, heads
// <= 2^10, batch <= 2^16, vocab x channels <= 2^28, batch x seq^2 x heads <= 2^28): the most tokens
// with the widest layers, the largest vocabulary over the most tokens, the longest sequence, and
// the most attention rows.
std::vector<Shape> largest_shapes() {
  return {{accepted(1 << 14, 64, 1 << 14, 1, 1 << 16), "most tokens (2^22) x widest channels (2^14)"},
          {accepted(1 << 20, 64, 1 << 8, 1, 1 << 16), "vocabulary 2^20 over 2^22 tokens (2^42 logits)"},
          {accepted(1 << 14, 1 << 14, 1 << 14, 1, 1), "longest sequence (2^14)"},
          {accepted(1 << 14, 1 << 14, 128, 1, 1), "longest sequence (2^14), the widest flash head (128)"},
          {accepted(1 << 14, 1, 1 << 14, 1 << 10, 1 << 16), "most attention rows (2^26)"}};
}

}  // namespace

TEST_CASE("launch audit: every kernel launch fits sm_80 limits at the test shapes") {
  for (const Shape& s : test_shapes()) {
    INFO(s.label);
    for (const LaunchConfig& l : launches_of(s.config)) check_limits(l);
  }
}

TEST_CASE("launch audit: every kernel launch fits sm_80 limits for the largest models zbrun accepts") {
  bool opted_in = false;
  for (const Shape& s : largest_shapes()) {
    INFO(s.label);
    for (const LaunchConfig& l : launches_of(s.config)) {
      check_limits(l);
      opted_in = opted_in || l.needs_opt_in();
    }
  }
  CHECK(opted_in);  // the > 48 KiB shared-memory path is among the launches audited
}

TEST_CASE("launch audit: launches cover their work") {
  for (const std::vector<Shape>& shapes : {test_shapes(), largest_shapes()})
    for (const Shape& s : shapes) {
      INFO(s.label);
      const GptConfig& c = s.config;
      const long BT = c.tokens(), rows = 1L * c.batch * c.heads * c.seq;
      // One warp per row: enough warps for every row.
      for (const LaunchConfig& l : {layernorm_forward_launch(BT), add_layernorm_forward_launch(BT),
                                    attention_delta_launch(rows), attention_forward_launch(c.seq, rows),
                                    attention_dkv_launch(c.seq, rows)})
        CHECK(l.grid.x * (l.block.x / 32) >= (std::string(l.kernel).find("layernorm") != std::string::npos ? BT : rows));
      // The attention kernels hold the row's scores: T floats a warp (2T for keys and values).
      const LaunchConfig fwd = attention_forward_launch(c.seq, rows), dkv = attention_dkv_launch(c.seq, rows);
      CHECK(fwd.dynamic_shared >= 4L * c.seq * (fwd.block.x / 32));
      CHECK(dkv.dynamic_shared >= 8L * c.seq * (dkv.block.x / 32));
      // One block per cross-entropy row and per column split.
      CHECK(crossentropy_launch(BT).grid.x == BT);
      const LaunchConfig cols = bias_partial_launch(4 * c.channels);
      CHECK(cols.grid.x * cols.block.x >= 4L * c.channels);
      CHECK(cols.grid.y == kColumnSplits);
    }
}

TEST_CASE("launch audit: the largest sequence's key-side attention backward opts into 128 KiB of shared memory") {
  const LaunchConfig dkv = attention_dkv_launch(1 << 14, 1 << 14);
  CHECK(dkv.block.x == 32);
  CHECK(dkv.dynamic_shared == 128 * 1024);
  std::vector<long> raised;
  prepare_launch(dkv, [&](long bytes) { raised.push_back(bytes); });
  CHECK(raised == std::vector<long>{128 * 1024});
  // A sequence no loader accepts is refused by name, not launched with too little memory.
  CHECK_THROWS_WITH(attention_dkv_launch(1 << 15, 1),
                    "attention_dkv_kernel: a sequence of 65536 score floats per row does not fit the attention "
                    "kernel's shared memory");
}

TEST_CASE("launch audit: the flash kernels' tiles cover the sequence and fit, aligned for WMMA") {
  for (int hs : {1, 16, 24, 64, 100, 128}) {
    INFO("head " << hs);
    for (const FlashSmem& m : {flash_forward_smem(hs), flash_backward_smem(hs)}) {
      CHECK(m.hsp % 16 == 0);
      CHECK(m.hsp >= hs);
      CHECK(m.ldh % 8 == 0);  // WMMA: bf16 rows a multiple of 16 bytes, fragments 32-byte aligned
      CHECK(m.ldf % 4 == 0);
      for (long offset : {m.q, m.k, m.v, m.s, m.p, m.o, m.dout, m.dp, m.ds, m.stats, m.stage}) CHECK(offset % 128 == 0);
      CHECK(m.bytes <= kAttentionSharedBudget);
    }
    const FlashSmem f = flash_forward_smem(hs);  // disjoint, in order
    CHECK(f.k >= f.q + kFlashQueryRows * f.ldh * 2);
    CHECK(f.stats + kFlashQueryRows * 4 <= f.bytes);
    const FlashSmem b = flash_backward_smem(hs);
    CHECK(b.ds >= b.p + kFlashBackwardRows * FlashSmem::kProbLd * 2);
    CHECK(b.stats + 2 * kFlashBackwardRows * 4 <= b.stage);
    CHECK(b.stage + kFlashWarps * 16 * 16 * 4 <= b.bytes);
  }
  for (int T : {1, 63, 64, 65, 1 << 14}) {
    const LaunchConfig fwd = flash_forward_launch(T, 6, 64);
    CHECK(fwd.grid.x == 6);
    CHECK(fwd.grid.y * kFlashQueryRows >= T);
    CHECK((fwd.grid.y - 1) * kFlashQueryRows < T);
    CHECK(flash_padded_rows(T) % kFlashKeyRows == 0);
    CHECK(flash_padded_rows(T) >= T);
  }
  // The dQ accumulator comes first in the scratch, then a delta per row.
  CHECK(attention_backward_scratch_floats(2, 130, 96, 4, AttentionVariant::kFlash) == 2L * 4 * 192 * 32 + 2 * 4 * 130);
  CHECK(attention_backward_scratch_floats(2, 130, 96, 4, AttentionVariant::kWarp) == 2L * 4 * 130);
}

TEST_CASE("ZBPP_CUDA_ATTENTION picks the attention kernels: flash where the head allows, else warp") {
  CHECK(attention_variant_from(nullptr, 128) == AttentionVariant::kFlash);
  CHECK(attention_variant_from("", 24) == AttentionVariant::kFlash);
  CHECK(attention_variant_from(nullptr, 129) == AttentionVariant::kWarp);
  CHECK(attention_variant_from("warp", 64) == AttentionVariant::kWarp);
  CHECK(attention_variant_from("lane", 64) == AttentionVariant::kLane);
  CHECK(attention_variant_from("flash", 64) == AttentionVariant::kFlash);
  CHECK_THROWS_WITH(attention_variant_from("flash", 256), Catch::Contains("heads of up to 128 channels"));
  CHECK_THROWS_WITH(attention_variant_from("fast", 64), Catch::Contains("expected flash, warp or lane"));
  CHECK(std::string(attention_variant_name(AttentionVariant::kFlash)) == "flash");
}
