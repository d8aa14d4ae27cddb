// Finite-difference checks of every CPU layer's B (_backward_input) and W (_backward_weight):
// for L = sum(out * r) with random r, the analytic gradients must match central differences.
#include "runtime/backend/cpu/layers.h"

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

using namespace zbpp::cpu;

namespace {

std::vector<float> random_vector(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Checks d(sum(forward() * r))/d(*x) against `analytic` at every element of *x; prints the worst.
void check_gradient(const char* what, std::vector<float>* x, const std::vector<float>& analytic,
                    const std::function<double()>& loss, double h = 1e-2, double tol = 2e-2) {
  double worst = 0;
  for (size_t i = 0; i < x->size(); ++i) {
    float keep = (*x)[i];
    (*x)[i] = keep + static_cast<float>(h);
    double up = loss();
    (*x)[i] = keep - static_cast<float>(h);
    double down = loss();
    (*x)[i] = keep;
    double numeric = (up - down) / (2 * h);
    double err = std::fabs(numeric - analytic[i]) / std::max(1.0, std::fabs(numeric));
    worst = std::max(worst, err);
  }
  INFO(what << ": max relative difference " << worst);
  CHECK(worst < tol);
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

TEST_CASE("layers: matmul B and W match finite differences") {
  std::mt19937 rng(1);
  const int BT = 3, C = 4, OC = 5;
  auto inp = random_vector(BT * C, rng), w = random_vector(OC * C, rng), b = random_vector(OC, rng);
  auto r = random_vector(BT * OC, rng);
  std::vector<float> out(BT * OC);
  auto loss = [&] {
    matmul_forward(out.data(), inp.data(), w.data(), b.data(), BT, C, OC);
    return dot(out, r);
  };
  std::vector<float> dinp(BT * C, 0), dw(OC * C, 0), db(OC, 0);
  matmul_backward_input(dinp.data(), r.data(), w.data(), BT, C, OC);
  matmul_backward_weight(dw.data(), db.data(), r.data(), inp.data(), BT, C, OC);
  check_gradient("matmul dinp", &inp, dinp, loss);
  check_gradient("matmul dweight", &w, dw, loss);
  check_gradient("matmul dbias", &b, db, loss);
}

TEST_CASE("layers: layernorm B and W match finite differences") {
  std::mt19937 rng(2);
  const int BT = 3, C = 6;
  auto inp = random_vector(BT * C, rng), w = random_vector(C, rng), b = random_vector(C, rng);
  auto r = random_vector(BT * C, rng);
  std::vector<float> out(BT * C), mean(BT), rstd(BT);
  auto loss = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), BT, C);
    return dot(out, r);
  };
  loss();
  std::vector<float> dinp(BT * C, 0), dw(C, 0), db(C, 0);
  layernorm_backward_input(dinp.data(), r.data(), inp.data(), mean.data(), rstd.data(), w.data(), BT, C);
  layernorm_backward_weight(dw.data(), db.data(), r.data(), inp.data(), mean.data(), rstd.data(), BT, C);
  check_gradient("layernorm dinp", &inp, dinp, loss, 1e-3);
  check_gradient("layernorm dweight", &w, dw, loss);
  check_gradient("layernorm dbias", &b, db, loss);
}

TEST_CASE("layers: attention, GELU and embedding match finite differences") {
  std::mt19937 rng(3);
  const int batch = 2, seq = 4, C = 8, NH = 2;
  auto qkv = random_vector(batch * seq * 3 * C, rng);
  auto r = random_vector(batch * seq * C, rng);
  std::vector<float> out(batch * seq * C), att(batch * NH * seq * seq);
  auto attn_loss = [&] {
    attention_forward(out.data(), att.data(), qkv.data(), batch, seq, C, NH);
    return dot(out, r);
  };
  attn_loss();
  std::vector<float> dqkv(qkv.size(), 0);
  attention_backward(dqkv.data(), r.data(), qkv.data(), att.data(), batch, seq, C, NH);
  check_gradient("attention dqkv", &qkv, dqkv, attn_loss, 1e-3);

  auto x = random_vector(20, rng, 2.0f), rg = random_vector(20, rng);
  std::vector<float> y(20);
  auto gelu_loss = [&] {
    gelu_forward(y.data(), x.data(), 20);
    return dot(y, rg);
  };
  std::vector<float> dx(20, 0);
  gelu_backward(dx.data(), x.data(), rg.data(), 20);
  check_gradient("gelu dinp", &x, dx, gelu_loss, 1e-3);

  const int V = 7;
  std::vector<int> tokens = {1, 5, 6, 1, 0, 2, 3, 5};
  auto wte = random_vector(V * C, rng), wpe = random_vector(seq * C, rng);
  auto enc_loss = [&] {
    encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), batch, seq, C);
    return dot(out, r);
  };
  std::vector<float> dwte(V * C, 0), dwpe(seq * C, 0);
  encoder_backward_weight(dwte.data(), dwpe.data(), r.data(), tokens.data(), batch, seq, C);
  check_gradient("encoder dwte", &wte, dwte, enc_loss);
  check_gradient("encoder dwpe", &wpe, dwpe, enc_loss);
}

TEST_CASE("layers: cross-entropy gradient matches finite differences") {
  std::mt19937 rng(4);
  const int BT = 3, V = 5;
  auto logits = random_vector(BT * V, rng);
  std::vector<int> targets = {0, 3, 4};
  std::vector<float> losses(BT), probs(BT * V);
  auto loss = [&] {
    crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), BT, V);
    double s = 0;
    for (float l : losses) s += l;
    return s;
  };
  loss();
  std::vector<float> d(BT * V, 0);
  crossentropy_backward(d.data(), probs.data(), targets.data(), 1.0f, BT, V);
  check_gradient("crossentropy dlogits", &logits, d, loss, 1e-3);
}
