// gpt-oss, Hugging Face -> GGUF, as llama.cpp's converter maps it: Q, K, V and output biases, the
// sinks (one logit per query head), the router with its bias, and the experts, whose
// gate_up_proj interleaves the rows of gate (even) and up (odd), split into ffn_gate_exps and
// ffn_up_exps. The published checkpoints hold the expert matrices in MXFP4 as blocks ([..., n / 32,
// 16] bytes, elements 2i and 2i + 1 in the low and high nibble of byte i) and scales (one E8M0
// exponent per 32 elements): they are written as GGUF MXFP4 (per block the exponent, then byte j
// holding elements j and j + 16) without re-encoding, whatever --outtype says. Dequantized
// checkpoints (BF16) store gate_up_proj as [expert, in, out] and down_proj likewise: transposed.
#include "convert/tensor_builder.h"

namespace mw::convert {
namespace {

// One MXFP4 expert stack: rows `rows` (per expert, of the R rows of the source) of blocks
// [X][R][C / 32][16] and scales [X][R][C / 32], as GGUF [X][rows][C] MXFP4.
void add_mxfp4(TensorBuilder& b, const std::string& gguf_name, const std::string& hf, uint64_t X,
               uint64_t R, uint64_t C, std::vector<uint32_t> rows) {
    const uint64_t nb = C / 32, n_rows = rows.size();  // before rows moves into the lambda
    b.add_raw(gguf_name, GgmlType::MXFP4, {X, n_rows, C},
              {{hf + "_blocks", {X, R, nb, 16}}, {hf + "_scales", {X, R, nb}}},
              [X, R, nb, rows = std::move(rows)](const std::vector<SourceTensor>& s, uint8_t* dst) {
                  const uint8_t* blocks = s[0].data;
                  const uint8_t* scales = s[1].data;
                  for (uint64_t x = 0; x < X; ++x) {
                      for (const uint32_t r : rows) {
                          for (uint64_t j = 0; j < nb; ++j) {
                              const uint64_t blk = (x * R + r) * nb + j;
                              const uint8_t* in = blocks + blk * 16;
                              *dst++ = scales[blk];
                              for (int k = 0; k < 16; ++k) {
                                  // Element k and k + 16, from bytes k / 2 and 8 + k / 2.
                                  const int sh = (k % 2) * 4;
                                  const uint8_t lo = (in[k / 2] >> sh) & 0x0F;
                                  const uint8_t hi = (in[8 + k / 2] >> sh) & 0x0F;
                                  *dst++ = uint8_t(lo | hi << 4);
                              }
                          }
                      }
                  }
              });
}

}  // namespace

void build_gptoss(TensorBuilder& b, Checkpoint& ck, const HfConfig& c) {
    const uint64_t E = c.n_embd, H = c.n_head, hd = c.head_dim;
    const uint64_t n_q = H * hd, n_kv = uint64_t(c.n_head_kv) * hd;
    const uint64_t X = c.n_expert, F = c.n_ff_expert;
    const std::string& m = c.tensor_prefix;
    b.add("output_norm.weight", m + "norm.weight", {E});
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        const std::string hf = fmt::format("{}layers.{}.", m, i);
        const std::string g = fmt::format("blk.{}.", i);
        const std::string at = hf + "self_attn.";
        b.add(g + "attn_norm.weight", hf + "input_layernorm.weight", {E});
        b.add(g + "attn_q.weight", at + "q_proj.weight", {n_q, E});
        b.add(g + "attn_q.bias", at + "q_proj.bias", {n_q});
        b.add(g + "attn_k.weight", at + "k_proj.weight", {n_kv, E});
        b.add(g + "attn_k.bias", at + "k_proj.bias", {n_kv});
        b.add(g + "attn_v.weight", at + "v_proj.weight", {n_kv, E});
        b.add(g + "attn_v.bias", at + "v_proj.bias", {n_kv});
        b.add(g + "attn_output.weight", at + "o_proj.weight", {E, n_q});
        b.add(g + "attn_output.bias", at + "o_proj.bias", {E});
        b.add(g + "attn_sinks.weight", at + "sinks", {H});
        b.add(g + "post_attention_norm.weight", hf + "post_attention_layernorm.weight", {E});
        b.add(g + "ffn_gate_inp.weight", hf + "mlp.router.weight", {X, E});
        b.add(g + "ffn_gate_inp.bias", hf + "mlp.router.bias", {X});

        const std::string ex = hf + "mlp.experts.";
        std::vector<uint32_t> even, odd;
        for (uint32_t r = 0; r < F; ++r) {
            even.push_back(2 * r);
            odd.push_back(2 * r + 1);
        }
        if (ck.has(ex + "gate_up_proj_blocks")) {
            if (E % 32 != 0 || F % 32 != 0) {
                fail(ErrorKind::bad_file,
                     "{}gate_up_proj_blocks: MXFP4 experts need hidden_size ({}) and "
                     "intermediate_size ({}) to be multiples of 32",
                     ex, E, F);
            }
            add_mxfp4(b, g + "ffn_gate_exps.weight", ex + "gate_up_proj", X, 2 * F, E, even);
            add_mxfp4(b, g + "ffn_up_exps.weight", ex + "gate_up_proj", X, 2 * F, E, odd);
            std::vector<uint32_t> all(E);
            for (uint32_t r = 0; r < E; ++r) all[r] = r;
            add_mxfp4(b, g + "ffn_down_exps.weight", ex + "down_proj", X, E, F, std::move(all));
        } else {
            // [X][E][2F] -> gate / up [X][F][E]; down [X][F][E] -> [X][E][F].
            for (const uint64_t parity : {0, 1}) {
                b.add_computed(g + (parity ? "ffn_up_exps.weight" : "ffn_gate_exps.weight"),
                               ex + "gate_up_proj", {X, E, 2 * F}, {X, F, E},
                               [X, E, F, parity](const SourceTensor& s, float* out) {
                                   std::vector<float> row(2 * F);
                                   for (uint64_t x = 0; x < X; ++x) {
                                       for (uint64_t e = 0; e < E; ++e) {
                                           s.decode_row(x * E + e, row.data());
                                           for (uint64_t f = 0; f < F; ++f)
                                               out[(x * F + f) * E + e] = row[2 * f + parity];
                                       }
                                   }
                               });
            }
            b.add_computed(g + "ffn_down_exps.weight", ex + "down_proj", {X, F, E}, {X, E, F},
                           [X, E, F](const SourceTensor& s, float* out) {
                               std::vector<float> row(E);
                               for (uint64_t x = 0; x < X; ++x) {
                                   for (uint64_t f = 0; f < F; ++f) {
                                       s.decode_row(x * F + f, row.data());
                                       for (uint64_t e = 0; e < E; ++e)
                                           out[(x * E + e) * F + f] = row[e];
                                   }
                               }
                           });
        }
        // gate_up_proj_bias [X][2F], interleaved as the rows.
        for (const uint64_t parity : {0, 1}) {
            b.add_computed(g + (parity ? "ffn_up_exps.bias" : "ffn_gate_exps.bias"),
                           ex + "gate_up_proj_bias", {X, 2 * F}, {X, F},
                           [X, F, parity](const SourceTensor& s, float* out) {
                               std::vector<float> row(2 * F);
                               for (uint64_t x = 0; x < X; ++x) {
                                   s.decode_row(x, row.data());
                                   for (uint64_t f = 0; f < F; ++f)
                                       out[x * F + f] = row[2 * f + parity];
                               }
                           });
        }
        b.add(g + "ffn_down_exps.bias", ex + "down_proj_bias", {X, E});
    }
}

}  // namespace mw::convert
