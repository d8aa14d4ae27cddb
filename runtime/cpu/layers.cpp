// CPU reference kernels (see layers.h). Loops are ordered so each output is summed in a fixed
// order, which keeps results bit-identical however the work is split into microbatches and stages.
#include "runtime/cpu/layers.h"

#include <cmath>
#include <vector>

namespace zbpp::cpu {

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int batch, int seq, int C) {
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < seq; ++t) {
      float* o = out + (static_cast<long>(b) * seq + t) * C;
      const float* te = wte + static_cast<long>(tokens[b * seq + t]) * C;
      const float* pe = wpe + static_cast<long>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = te[i] + pe[i];
    }
}

void encoder_backward_weight(float* dwte, float* dwpe, const float* dout, const int* tokens, int batch, int seq, int C) {
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < seq; ++t) {
      const float* d = dout + (static_cast<long>(b) * seq + t) * C;
      float* te = dwte + static_cast<long>(tokens[b * seq + t]) * C;
      float* pe = dwpe + static_cast<long>(t) * C;
      for (int i = 0; i < C; ++i) {
        te[i] += d[i];
        pe[i] += d[i];
      }
    }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int BT, int C) {
  const float eps = 1e-5f;
  for (int i = 0; i < BT; ++i) {
    const float* x = inp + static_cast<long>(i) * C;
    float m = 0;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
    float v = 0;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= C;
    float s = 1.0f / std::sqrt(v + eps);
    float* o = out + static_cast<long>(i) * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[i] = m;
    rstd[i] = s;
  }
}

void layernorm_backward_input(float* dinp, const float* dout, const float* inp, const float* mean, const float* rstd,
                              const float* weight, int BT, int C) {
  for (int i = 0; i < BT; ++i) {
    const float* d = dout + static_cast<long>(i) * C;
    const float* x = inp + static_cast<long>(i) * C;
    float* dx = dinp + static_cast<long>(i) * C;
    float m = mean[i], s = rstd[i];
    float dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int c = 0; c < C; ++c) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * d[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; ++c) {
      float norm = (x[c] - m) * s;
      float dnorm = weight[c] * d[c];
      dx[c] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
}

void layernorm_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, const float* mean,
                               const float* rstd, int BT, int C) {
  for (int i = 0; i < BT; ++i) {
    const float* d = dout + static_cast<long>(i) * C;
    const float* x = inp + static_cast<long>(i) * C;
    for (int c = 0; c < C; ++c) {
      dweight[c] += (x[c] - mean[i]) * rstd[i] * d[c];
      dbias[c] += d[c];
    }
  }
}

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int BT, int C, int OC) {
  for (int i = 0; i < BT; ++i) {
    const float* x = inp + static_cast<long>(i) * C;
    float* o = out + static_cast<long>(i) * OC;
    for (int j = 0; j < OC; ++j) {
      const float* w = weight + static_cast<long>(j) * C;
      float acc = bias ? bias[j] : 0.0f;
      for (int c = 0; c < C; ++c) acc += x[c] * w[c];
      o[j] = acc;
    }
  }
}

void matmul_backward_input(float* dinp, const float* dout, const float* weight, int BT, int C, int OC) {
  for (int i = 0; i < BT; ++i) {
    const float* d = dout + static_cast<long>(i) * OC;
    float* dx = dinp + static_cast<long>(i) * C;
    for (int j = 0; j < OC; ++j) {
      const float* w = weight + static_cast<long>(j) * C;
      float g = d[j];
      for (int c = 0; c < C; ++c) dx[c] += g * w[c];
    }
  }
}

void matmul_backward_weight(float* dweight, float* dbias, const float* dout, const float* inp, int BT, int C, int OC) {
  for (int j = 0; j < OC; ++j) {
    float* dw = dweight + static_cast<long>(j) * C;
    float db = 0;
    for (int i = 0; i < BT; ++i) {
      const float* x = inp + static_cast<long>(i) * C;
      float g = dout[static_cast<long>(i) * OC + j];
      db += g;
      for (int c = 0; c < C; ++c) dw[c] += g * x[c];
    }
    if (dbias) dbias[j] += db;
  }
}

void attention_forward(float* out, float* att, const float* qkv, int batch, int seq, int C, int NH) {
  int hs = C / NH;
  float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < seq; ++t)
      for (int h = 0; h < NH; ++h) {
        const float* q = qkv + (static_cast<long>(b) * seq + t) * 3 * C + h * hs;
        float* a = att + ((static_cast<long>(b) * NH + h) * seq + t) * seq;
        float maxv = -1e30f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<long>(b) * seq + t2) * 3 * C + C + h * hs;
          float v = 0;
          for (int i = 0; i < hs; ++i) v += q[i] * k[i];
          v *= scale;
          a[t2] = v;
          if (v > maxv) maxv = v;
        }
        float sum = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          a[t2] = std::exp(a[t2] - maxv);
          sum += a[t2];
        }
        for (int t2 = 0; t2 < seq; ++t2) a[t2] = t2 <= t ? a[t2] / sum : 0.0f;
        float* o = out + (static_cast<long>(b) * seq + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<long>(b) * seq + t2) * 3 * C + 2 * C + h * hs;
          for (int i = 0; i < hs; ++i) o[i] += a[t2] * v[i];
        }
      }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int batch, int seq, int C,
                        int NH) {
  int hs = C / NH;
  float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::vector<float> datt(static_cast<size_t>(seq)), dpre(static_cast<size_t>(seq));
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < seq; ++t)
      for (int h = 0; h < NH; ++h) {
        const float* a = att + ((static_cast<long>(b) * NH + h) * seq + t) * seq;
        const float* d = dout + (static_cast<long>(b) * seq + t) * C + h * hs;
        const float* q = qkv + (static_cast<long>(b) * seq + t) * 3 * C + h * hs;
        float* dq = dqkv + (static_cast<long>(b) * seq + t) * 3 * C + h * hs;
        // out = sum_t2 att[t2] * v[t2]
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<long>(b) * seq + t2) * 3 * C + 2 * C + h * hs;
          float* dv = dqkv + (static_cast<long>(b) * seq + t2) * 3 * C + 2 * C + h * hs;
          float g = 0;
          for (int i = 0; i < hs; ++i) {
            g += v[i] * d[i];
            dv[i] += a[t2] * d[i];
          }
          datt[t2] = g;
        }
        // softmax backward
        float dot = 0;
        for (int t2 = 0; t2 <= t; ++t2) dot += a[t2] * datt[t2];
        for (int t2 = 0; t2 <= t; ++t2) dpre[t2] = a[t2] * (datt[t2] - dot) * scale;
        // pre = q . k
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<long>(b) * seq + t2) * 3 * C + C + h * hs;
          float* dk = dqkv + (static_cast<long>(b) * seq + t2) * 3 * C + C + h * hs;
          for (int i = 0; i < hs; ++i) {
            dq[i] += k[i] * dpre[t2];
            dk[i] += q[i] * dpre[t2];
          }
        }
      }
}

void gelu_forward(float* out, const float* inp, int N) {
  const float s = std::sqrt(2.0f / static_cast<float>(M_PI));
  for (int i = 0; i < N; ++i) {
    float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(s * (x + 0.044715f * x * x * x)));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int N) {
  const float s = std::sqrt(2.0f / static_cast<float>(M_PI));
  for (int i = 0; i < N; ++i) {
    float x = inp[i];
    float u = s * (x + 0.044715f * x * x * x);
    float th = std::tanh(u);
    float sech2 = 1.0f - th * th;
    float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * s * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += grad * dout[i];
  }
}

void crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int BT, int V) {
  for (int i = 0; i < BT; ++i) {
    const float* l = logits + static_cast<long>(i) * V;
    float* p = probs + static_cast<long>(i) * V;
    float maxv = l[0];
    for (int v = 1; v < V; ++v) maxv = l[v] > maxv ? l[v] : maxv;
    float sum = 0;
    for (int v = 0; v < V; ++v) {
      p[v] = std::exp(l[v] - maxv);
      sum += p[v];
    }
    for (int v = 0; v < V; ++v) p[v] /= sum;
    losses[i] = -std::log(p[targets[i]]);
  }
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float scale, int BT, int V) {
  for (int i = 0; i < BT; ++i) {
    const float* p = probs + static_cast<long>(i) * V;
    float* d = dlogits + static_cast<long>(i) * V;
    for (int v = 0; v < V; ++v) d[v] += scale * (p[v] - (v == targets[i] ? 1.0f : 0.0f));
  }
}

}  // namespace zbpp::cpu
