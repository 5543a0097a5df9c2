// Selection quality of a policy (`fasa eval recall`): after a dense prefill, teacher-force decode
// steps with the policy active and, at every step, layer and query head, compare the slots it
// read with the oracle top-B of the full attention logits (recall) and measure the share of the
// full attention mass they hold. A dense session runs in lockstep to give KL(full ‖ policy) of
// the next-token distributions. On a hybrid stack (gemma3) only the global layers are measured:
// sliding-window layers attend over their window, outside any policy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fasa/attention/kv_cache.h"
#include "fasa/model/model.h"

namespace fasa {

struct RecallOptions {
  int n_ctx = 1024;                  // dense prefill length
  int steps = 32;                    // decode steps measured
  std::string policy;                // spec, e.g. "fasa:calib=c.json,budget=256"
  std::vector<std::string> compare;  // more specs measured on the same steps
  KvType kv_type = KvType::F16;
};

struct RecallResult {
  std::string policy;
  int n_layers = 0;  // of the model
  int n_heads = 0;
  std::vector<int> layers;     // [n_eval] the layers evaluated: the global ones (all layers
                               // of a model without sliding windows)
  int budget_last = 0;         // slots per head at the last step (oracle size)
  std::vector<double> recall;  // [n_eval, n_heads] mean over steps
  std::vector<double> mass;    // [n_eval, n_heads] mean share of full attention mass
  std::vector<double> kl;      // [steps] KL(full || policy), nats
  double mean_recall = 0.0;    // over evaluated (layer, head, step)s the policy ran sparse
  double mean_mass = 0.0;      // (1 when it never did)
  double mean_kl = 0.0;
  double dense_fraction = 0.0;  // share of (layer, head, step) that read every slot
  // KV bytes per decoded token (the session's AttnStats over the measured steps): what the
  // policy read to choose plus the K/V rows it attended, and what dense attention would read.
  double kv_bytes_read_per_token = 0.0;
  double dense_kv_bytes_read_per_token = 0.0;
  double seconds = 0.0;
};

// The measures of one query head at one decode step, from its full attention logits.
struct HeadMeasure {
  double recall = 1.0;  // |selected ∩ TopK(logits)| / k, the oracle's top-k (ties: lower slot)
  double mass = 1.0;    // Σ over selected slots of softmax(scale * logits)
};
// logits: [n] the head's full logits q·k (unscaled); scale: the softmax's (1/√head_dim);
// k in [1, n]: the oracle's size; selected: ascending, unique slots in [0, n) the policy read,
// or null for every slot (recall 1, mass 1).
HeadMeasure measure_head(const float* logits, int n, int k, float scale,
                         const std::vector<int32_t>* selected);

// KL(P ‖ Q) in nats of the next-token distributions P = softmax(p_logits), Q = softmax(q_logits),
// both [n_vocab].
double kl_of_logits(const float* p_logits, const float* q_logits, int n_vocab);

// The budget of the oracle comparison is the policy's `budget` option (every slot when none).
RecallResult evaluate_recall(const std::shared_ptr<const Model>& model,
                             const std::vector<int32_t>& tokens, const RecallOptions& opts,
                             const std::function<void(int, int)>& progress);
// opts.policy, then every opts.compare spec, on the same prefix and steps (the dense prefix is
// computed once and copied): [1 + compare.size()].
std::vector<RecallResult> evaluate_recall_all(const std::shared_ptr<const Model>& model,
                                              const std::vector<int32_t>& tokens,
                                              const RecallOptions& opts,
                                              const std::function<void(int, int)>& progress);

}  // namespace fasa
