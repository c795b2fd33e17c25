#include "convert/hf_vocab.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "format/gguf_writer.h"
#include "format/json_text.h"
#include "vocab/pretokenizer.h"

namespace mw::convert {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxTokens = 1u << 24;
constexpr uint64_t kMaxIdGap = 1u << 16;
constexpr const char* kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Pre-tokenizer split expressions as tokenizer.json spells them, and the tokenizer.ggml.pre
// value llama.cpp uses for each.
struct KnownSplit {
    const char* regex;
    const char* pre;
};
constexpr KnownSplit kKnownSplits[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "qwen2"},
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", "gpt-2"},
    // o200k (GPT-4o, gpt-oss).
    {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
     "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "gpt-4o"},
};

// llama.cpp's heuristic for added tokens that are special although not marked so.
bool looks_special(const std::string& t) {
    auto wrapped = [&](std::string_view open, std::string_view close) {
        return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
               t.compare(t.size() - close.size(), close.size(), close) == 0;
    };
    return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
           wrapped("<|", "|>") || wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") ||
           wrapped("<unused", ">");
}

bool is_byte_token(const std::string& t) {
    auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

std::string replace_all(const std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    size_t at = 0;
    for (size_t hit = s.find(from); hit != s.npos; hit = s.find(from, at)) {
        out.append(s, at, hit - at).append(to);
        at = hit + from.size();
    }
    return out.append(s, at, s.npos);
}

class TokenizerJson {
  public:
    TokenizerJson(const json& root, const std::string& name) : root_(root), name_(name) {}

    [[noreturn]] void bad(const std::string& field, const std::string& what) const {
        fail(ErrorKind::bad_file, "{}: \"{}\" {}", name_, field, what);
    }
    [[noreturn]] void unsupported(const std::string& field, const std::string& what) const {
        fail(ErrorKind::unsupported, "{}: \"{}\" {}", name_, field, what);
    }

    const json& object(const json& parent, const char* key, const std::string& path) const {
        const auto it = parent.find(key);
        if (it == parent.end() || !it->is_object()) {
            bad(path, it == parent.end()
                          ? "is missing"
                          : fmt::format("is {}, expected an object", json_type_word(*it)));
        }
        return *it;
    }

    static const json* member(const json& parent, const char* key) {
        const auto it = parent.find(key);
        return it == parent.end() || it->is_null() ? nullptr : &*it;
    }

    // id -> text of model.vocab, then added_tokens on top.
    void read_tokens(const json& model) {
        const json& vocab = object(model, "vocab", "model.vocab");
        const json* added = member(root_, "added_tokens");
        if (added && !added->is_array()) bad("added_tokens", "is not an array");
        // Ids are dense in real tokenizers; a few gaps are padded, but an id far beyond the
        // number of tokens would only make the vocabulary (and memory) balloon.
        const uint64_t limit =
            std::min<uint64_t>(kMaxTokens, vocab.size() + (added ? added->size() : 0) + kMaxIdGap);
        auto valid_id = [&](const json& id) {
            return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<uint64_t>() < limit;
        };
        for (const auto& [text, id] : vocab.items()) {
            if (!valid_id(id)) {
                bad("model.vocab", fmt::format("maps \"{}\" to {}, which is not a token id (0 to "
                                               "{})",
                                               text, json_brief(id), limit - 1));
            }
            place(id.get<uint32_t>(), text, "model.vocab");
        }
        if (!added) return;
        for (size_t i = 0; i < added->size(); ++i) {
            const json& a = (*added)[i];
            const std::string path = fmt::format("added_tokens[{}]", i);
            const json* id = a.is_object() ? member(a, "id") : nullptr;
            const json* content = a.is_object() ? member(a, "content") : nullptr;
            if (!id || !valid_id(*id) || !content || !content->is_string()) {
                bad(path, fmt::format("is not an object with a token id \"id\" (0 to {}) and a "
                                      "string \"content\"",
                                      limit - 1));
            }
            const uint32_t tid = id->get<uint32_t>();
            const std::string& text = content->get_ref<const std::string&>();
            if (tid < texts_.size() && texts_[tid] && *texts_[tid] != text) {
                bad(path, fmt::format("gives id {} to \"{}\", but model.vocab gives it to \"{}\"",
                                      tid, text, *texts_[tid]));
            }
            place(tid, text, path);
            const json* special = member(a, "special");
            added_[tid] = special && special->is_boolean() && special->get<bool>();
        }
    }

    std::vector<std::string> read_merges(const json& model) const {
        std::vector<std::string> merges;
        const json* m = member(model, "merges");
        if (!m) return merges;
        if (!m->is_array()) bad("model.merges", "is not an array");
        merges.reserve(m->size());
        for (size_t i = 0; i < m->size(); ++i) {
            const json& e = (*m)[i];
            const std::string path = fmt::format("model.merges[{}]", i);
            if (e.is_string()) {
                const std::string& s = e.get_ref<const std::string&>();
                const size_t space = s.find(' ', 1);
                if (space == s.npos || space + 1 == s.size()) {
                    bad(path, fmt::format("= \"{}\" is not two tokens separated by a space", s));
                }
                merges.push_back(s);
            } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
                const std::string& a = e[0].get_ref<const std::string&>();
                const std::string& b = e[1].get_ref<const std::string&>();
                if (a.empty() || b.empty() || a.find(' ') != a.npos || b.find(' ') != b.npos) {
                    unsupported(path, fmt::format("= [\"{}\", \"{}\"] has a token with a space (or "
                                                  "an empty one), which GGUF's \"left right\" "
                                                  "merges cannot express",
                                                  a, b));
                }
                merges.push_back(a + " " + b);
            } else {
                bad(path, "is neither \"left right\" nor [\"left\", \"right\"]");
            }
        }
        return merges;
    }

    const std::vector<std::optional<std::string>>& texts() const { return texts_; }
    const std::map<uint32_t, bool>& added() const { return added_; }

  private:
    void place(uint32_t id, const std::string& text, const std::string& path) {
        if (id >= texts_.size()) texts_.resize(size_t(id) + 1);
        if (texts_[id] && *texts_[id] != text) {
            bad(path, fmt::format("gives id {} to both \"{}\" and \"{}\"", id, *texts_[id], text));
        }
        texts_[id] = text;
    }

    const json& root_;
    const std::string& name_;
    std::vector<std::optional<std::string>> texts_;
    std::map<uint32_t, bool> added_;  // id -> special
};

// The pre-tokenizer's split expressions and whether it is byte-level.
struct PreTokenizerShape {
    bool byte_level = false;
    bool metaspace = false;
    std::vector<std::string> splits;  // Split expressions in order
    bool byte_level_regex = false;    // ByteLevel with use_regex (GPT-2's own expression)
    bool metaspace_prefix = false;    // Metaspace adds "▁" at the start
};

void describe_pre_tokenizer(const json& p, PreTokenizerShape& shape, const TokenizerJson& tj) {
    const json* type = TokenizerJson::member(p, "type");
    if (!type || !type->is_string()) tj.bad("pre_tokenizer", "has no \"type\"");
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "Sequence") {
        const json* list = TokenizerJson::member(p, "pretokenizers");
        if (!list || !list->is_array()) tj.bad("pre_tokenizer.pretokenizers", "is not an array");
        for (const json& item : *list) {
            if (!item.is_object()) tj.bad("pre_tokenizer.pretokenizers", "holds a non-object");
            describe_pre_tokenizer(item, shape, tj);
        }
    } else if (t == "ByteLevel") {
        shape.byte_level = true;
        const json* use_regex = TokenizerJson::member(p, "use_regex");
        if (!use_regex || (use_regex->is_boolean() && use_regex->get<bool>())) {
            shape.byte_level_regex = true;
        }
    } else if (t == "Split") {
        const json* pattern = TokenizerJson::member(p, "pattern");
        const json* regex =
            pattern && pattern->is_object() ? TokenizerJson::member(*pattern, "Regex") : nullptr;
        if (!regex || !regex->is_string()) {
            tj.unsupported("pre_tokenizer", "has a Split without a Regex pattern");
        }
        shape.splits.push_back(regex->get<std::string>());
    } else if (t == "Metaspace") {
        shape.metaspace = true;
        const json* scheme = TokenizerJson::member(p, "prepend_scheme");
        const json* add = TokenizerJson::member(p, "add_prefix_space");
        shape.metaspace_prefix = scheme
                                     ? scheme->is_string() && scheme->get<std::string>() != "never"
                                     : !add || (add->is_boolean() && add->get<bool>());
    } else if (t == "Digits" || t == "Punctuation" || t == "Whitespace" || t == "WhitespaceSplit") {
        tj.unsupported("pre_tokenizer",
                       fmt::format("uses a {} pre-tokenizer; give the matching llama.cpp "
                                   "tokenizer.ggml.pre name with --vocab-pre",
                                   t));
    } else {
        tj.unsupported("pre_tokenizer", fmt::format("type \"{}\" is not supported", t));
    }
}

std::string detect_pre(const PreTokenizerShape& shape, const TokenizerJson& tj) {
    if (shape.splits.empty() && shape.byte_level_regex) return "gpt-2";
    if (shape.splits.size() == 1 && !shape.byte_level_regex) {
        for (const KnownSplit& k : kKnownSplits) {
            if (shape.splits[0] == k.regex) return k.pre;
        }
    }
    std::string known;
    for (const std::string_view n : tokenizer::known_pre_tokenizers()) {
        known += known.empty() ? "" : ", ";
        known += n;
    }
    tj.unsupported("pre_tokenizer",
                   fmt::format("{} is not a pre-tokenizer memwall recognises; name the matching "
                               "llama.cpp tokenizer.ggml.pre with --vocab-pre (one of: {})",
                               shape.splits.empty() ? std::string("the ByteLevel split")
                                                    : "the split \"" + shape.splits[0] + "\"",
                               known));
}

// "llama" scores from BPE merge ranks: llama.cpp's SentencePiece tokenizer merges the adjacent
// pair whose result scores highest, so the result of merge i scores -i.
std::vector<float> scores_from_merges(const GgufVocab& v, const std::vector<std::string>& merges) {
    std::unordered_map<std::string, uint32_t> id_of;
    for (uint32_t i = 0; i < v.tokens.size(); ++i) id_of.emplace(v.tokens[i], i);
    std::vector<float> scores(v.tokens.size(), 0.0f);
    std::vector<bool> scored(v.tokens.size(), false);
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const size_t space = m.find(' ', 1);
        const auto it = id_of.find(m.substr(0, space) + m.substr(space + 1));
        if (it == id_of.end() || scored[it->second]) continue;
        scores[it->second] = -float(rank);
        scored[it->second] = true;
    }
    return scores;
}

}  // namespace

void GgufVocab::set_special_id(const std::string& kind, uint32_t id) {
    if (special_id(kind)) return;
    special_ids.emplace_back(kind, id);
}

std::optional<uint32_t> GgufVocab::special_id(const std::string& kind) const {
    for (const auto& [k, id] : special_ids) {
        if (k == kind) return id;
    }
    return std::nullopt;
}

std::optional<uint32_t> GgufVocab::find(const std::string& text) const {
    const auto it = std::find(tokens.begin(), tokens.end(), text);
    if (it == tokens.end()) return std::nullopt;
    return uint32_t(it - tokens.begin());
}

GgufVocab vocab_from_spm(const SpmModel& m) {
    GgufVocab v;
    v.model = "llama";
    v.pre = "default";
    for (const SpmModel::Piece& p : m.pieces) {
        v.tokens.push_back(p.text);
        v.scores.push_back(p.score);
        v.types.push_back(p.type);
    }
    if (!m.add_dummy_prefix) v.add_space_prefix = false;
    if (m.model_type != 2) {
        v.warnings.push_back(fmt::format(
            "tokenizer.model is a SentencePiece {} model; llama.cpp's \"llama\" tokenizer merges "
            "by score like a BPE model, so token ids may differ from SentencePiece's",
            m.model_type == 1 ? "unigram" : "non-BPE"));
    }
    return v;
}

GgufVocab vocab_from_tokenizer_json(std::span<const uint8_t> bytes, const std::string& name,
                                    const std::string& pre_override) {
    const json root = parse_json_strict(bytes, name, "tokenizer");
    if (!root.is_object()) {
        fail(ErrorKind::bad_file, "{}: the tokenizer is {}, expected an object", name,
             json_type_word(root));
    }
    TokenizerJson tj(root, name);
    const json& model = tj.object(root, "model", "model");
    const json* type = TokenizerJson::member(model, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "BPE") {
        tj.unsupported("model.type",
                       fmt::format("= {} is not supported (memwall converts BPE tokenizers; a "
                                   "SentencePiece model needs its tokenizer.model)",
                                   type ? json_brief(*type) : "missing"));
    }
    tj.read_tokens(model);
    const std::vector<std::string> merges = tj.read_merges(model);

    PreTokenizerShape shape;
    if (const json* pre = TokenizerJson::member(root, "pre_tokenizer")) {
        if (!pre->is_object()) tj.bad("pre_tokenizer", "is not an object");
        describe_pre_tokenizer(*pre, shape, tj);
    }
    const json* byte_fallback = TokenizerJson::member(model, "byte_fallback");
    const bool spm_like =
        !shape.byte_level && (shape.metaspace || (byte_fallback && byte_fallback->is_boolean() &&
                                                  byte_fallback->get<bool>()));
    if (!shape.byte_level && !spm_like) {
        tj.unsupported("pre_tokenizer",
                       "is neither byte-level (GPT-2 style) nor SentencePiece style (Metaspace or "
                       "byte fallback)");
    }

    GgufVocab v;
    const auto& texts = tj.texts();
    for (uint32_t id = 0; id < texts.size(); ++id) {
        if (!texts[id]) {
            v.tokens.push_back(fmt::format("[PAD{}]", id));
            v.types.push_back(token_unused);
            continue;
        }
        std::string text = *texts[id];
        int32_t type_of = token_normal;
        if (const auto a = tj.added().find(id); a != tj.added().end()) {
            if (a->second || looks_special(text)) {
                type_of = token_control;
            } else {
                type_of = token_user_defined;
                text = replace_all(text, kSpmSpace, " ");  // pre-normalized, as llama.cpp expects
            }
        } else if (spm_like && is_byte_token(text)) {
            type_of = token_byte;
        }
        v.tokens.push_back(std::move(text));
        v.types.push_back(type_of);
    }
    if (spm_like) {
        v.model = "llama";
        v.pre = "default";
        v.scores = scores_from_merges(v, merges);
        if (const json* unk = TokenizerJson::member(model, "unk_token"); unk && unk->is_string()) {
            if (const auto id = v.find(unk->get<std::string>())) {
                v.types[*id] = token_unknown;
                v.set_special_id("unknown", *id);
            }
        }
        if (shape.metaspace) v.add_space_prefix = shape.metaspace_prefix;
    } else {
        v.model = "gpt2";
        v.merges = merges;
        v.pre = pre_override.empty() ? detect_pre(shape, tj) : pre_override;
        tokenizer::PreTokenizerConfig config;
        if (!tokenizer::pre_tokenizer_config(v.pre, config)) {
            fail(ErrorKind::invalid_argument,
                 "tokenizer.ggml.pre \"{}\" is not a pre-tokenizer "
                 "memwall knows",
                 v.pre);
        }
    }
    return v;
}

void apply_added_tokens_json(GgufVocab& v, std::span<const uint8_t> bytes,
                             const std::string& name) {
    const json root = parse_json_strict(bytes, name, "added tokens");
    if (!root.is_object())
        fail(ErrorKind::bad_file, "{}: expected an object of \"text\": id", name);
    for (const auto& [text, id] : root.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<uint64_t>() >= kMaxTokens) {
            fail(ErrorKind::bad_file, "{}: \"{}\" maps to {}, which is not a token id", name, text,
                 json_brief(id));
        }
        const uint32_t tid = id.get<uint32_t>();
        if (tid >= v.tokens.size()) {
            v.warnings.push_back(fmt::format("{}: \"{}\" has id {}, past the {} tokens; ignored",
                                             name, text, tid, v.tokens.size()));
            continue;
        }
        v.tokens[tid] = text;
        if (!v.scores.empty()) v.scores[tid] = -1000.0f;
        v.types[tid] = token_user_defined;
    }
}

void apply_tokenizer_config(GgufVocab& v, std::span<const uint8_t> bytes, const std::string& name) {
    const json root = parse_json_strict(bytes, name, "tokenizer config");
    if (!root.is_object())
        fail(ErrorKind::bad_file, "{}: the tokenizer config is not an object", name);

    // Added tokens of SentencePiece vocabs (byte-level BPE ones come from tokenizer.json).
    if (v.model == "llama") {
        if (const auto it = root.find("added_tokens_decoder");
            it != root.end() && it->is_object()) {
            for (const auto& [key, data] : it->items()) {
                uint32_t id = 0;
                const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
                const json* content =
                    data.is_object() ? TokenizerJson::member(data, "content") : nullptr;
                if (ec != std::errc() || end != key.data() + key.size() || !content ||
                    !content->is_string()) {
                    fail(ErrorKind::bad_file,
                         "{}: \"added_tokens_decoder\" entry \"{}\" is not an id with a string "
                         "content",
                         name, key);
                }
                if (id >= v.tokens.size()) {
                    v.warnings.push_back(fmt::format(
                        "{}: added token {} is past the {} tokens of tokenizer.model; ignored",
                        name, id, v.tokens.size()));
                    continue;
                }
                std::string text = content->get<std::string>();
                const json* special = TokenizerJson::member(data, "special");
                if ((special && special->is_boolean() && special->get<bool>()) ||
                    looks_special(text)) {
                    v.types[id] = token_control;
                } else {
                    text = replace_all(text, kSpmSpace, " ");
                    v.types[id] = token_user_defined;
                }
                v.tokens[id] = std::move(text);
                if (id < v.scores.size()) v.scores[id] = -1000.0f;
            }
        }
    }

    // Special tokens named by their text ("bos_token": "<s>" or {"content": "<s>", ...}).
    static const std::pair<const char*, const char*> kKinds[] = {
        {"bos", "bos"},     {"eos", "eos"}, {"unk", "unknown"}, {"sep", "seperator"},
        {"pad", "padding"}, {"cls", "cls"}, {"mask", "mask"}};
    for (const auto& [hf, gguf_kind] : kKinds) {
        // GGUF has add_*_token flags for these three only.
        const bool has_add_flag = std::string_view(hf) == "bos" || std::string_view(hf) == "eos" ||
                                  std::string_view(hf) == "sep";
        const auto add = root.find(fmt::format("add_{}_token", hf));
        if (has_add_flag && add != root.end() && add->is_boolean()) {
            v.add_special.emplace_back(hf, add->get<bool>());
        }
        const auto entry = root.find(fmt::format("{}_token", hf));
        if (entry == root.end()) continue;
        const json* content =
            entry->is_object() ? TokenizerJson::member(*entry, "content") : &*entry;
        if (!content || !content->is_string()) continue;
        if (const auto id = v.find(content->get<std::string>())) v.set_special_id(gguf_kind, *id);
    }
    if (const auto it = root.find("add_prefix_space"); it != root.end() && it->is_boolean()) {
        v.add_space_prefix = it->get<bool>();
    }

    if (const auto it = root.find("chat_template"); it != root.end() && !it->is_null()) {
        if (it->is_string()) {
            v.chat_templates.emplace_back("", it->get<std::string>());
        } else if (it->is_array()) {
            for (const json& t : *it) {
                const json* n = t.is_object() ? TokenizerJson::member(t, "name") : nullptr;
                const json* text = t.is_object() ? TokenizerJson::member(t, "template") : nullptr;
                if (!n || !n->is_string() || !text || !text->is_string()) {
                    fail(ErrorKind::bad_file,
                         "{}: \"chat_template\" entries must be {{\"name\", \"template\"}}", name);
                }
                const std::string tname = n->get<std::string>();
                v.chat_templates.emplace_back(tname == "default" ? "" : tname,
                                              text->get<std::string>());
            }
        } else {
            v.warnings.push_back(
                fmt::format("{}: \"chat_template\" is {}; ignored", name, json_type_word(*it)));
        }
    }
}

void pad_vocab(GgufVocab& v, uint32_t n_vocab, const std::string& source) {
    if (v.tokens.size() > n_vocab) {
        fail(ErrorKind::bad_file,
             "{}: the tokenizer has {} tokens, more than the model's vocab_size = {}", source,
             v.tokens.size(), n_vocab);
    }
    for (uint32_t id = uint32_t(v.tokens.size()); id < n_vocab; ++id) {
        v.tokens.push_back(fmt::format("[PAD{}]", id));
        v.types.push_back(token_unused);
        if (v.model == "llama") v.scores.push_back(-1000.0f);
    }
}

void validate_vocab(const GgufVocab& v, const std::string& source) {
    std::unordered_map<std::string_view, uint32_t> ids;
    for (uint32_t i = 0; i < v.tokens.size(); ++i) {
        const auto [it, inserted] = ids.emplace(v.tokens[i], i);
        if (!inserted) {
            fail(ErrorKind::bad_file, "{}: the token \"{}\" appears twice (ids {} and {})", source,
                 v.tokens[i], it->second, i);
        }
        if (v.types[i] == token_byte && !is_byte_token(v.tokens[i])) {
            fail(ErrorKind::bad_file, "{}: token {} (\"{}\") is a byte token not spelled <0xXX>",
                 source, i, v.tokens[i]);
        }
    }
    for (size_t i = 0; i < v.merges.size(); ++i) {
        const std::string& m = v.merges[i];
        const size_t space = m.find(' ', 1);
        for (const std::string& part :
             {m.substr(0, space), m.substr(space + 1), m.substr(0, space) + m.substr(space + 1)}) {
            if (!ids.count(part)) {
                fail(ErrorKind::bad_file,
                     "{}: merge {} (\"{}\") refers to \"{}\", which is not a token", source, i, m,
                     part);
            }
        }
    }
    for (const auto& [kind, id] : v.special_ids) {
        if (id >= v.tokens.size()) {
            fail(ErrorKind::bad_file, "{}: the {} token id {} is past the {} tokens", source, kind,
                 id, v.tokens.size());
        }
    }
}

void write_vocab(gguf::GgufWriter& w, const GgufVocab& v) {
    w.set_string("tokenizer.ggml.model", v.model);
    w.set_string("tokenizer.ggml.pre", v.pre);
    w.set_array_strings("tokenizer.ggml.tokens", v.tokens);
    if (!v.scores.empty()) w.set_array_f32("tokenizer.ggml.scores", v.scores);
    w.set_array_i32("tokenizer.ggml.token_type", v.types);
    if (!v.merges.empty()) w.set_array_strings("tokenizer.ggml.merges", v.merges);
    for (const auto& [kind, id] : v.special_ids) {
        w.set_u32(fmt::format("tokenizer.ggml.{}_token_id", kind), id);
    }
    for (const auto& [kind, add] : v.add_special) {
        w.set_bool(fmt::format("tokenizer.ggml.add_{}_token", kind), add);
    }
    if (v.add_space_prefix) w.set_bool("tokenizer.ggml.add_space_prefix", *v.add_space_prefix);
    for (const auto& [name, text] : v.chat_templates) {
        w.set_string(name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
                     text);
    }
}

}  // namespace mw::convert
