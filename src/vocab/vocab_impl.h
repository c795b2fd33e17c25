// Vocab's loaded data, shared by the loader (vocab_load.cpp), the tokenizers
// (tokenize_*.cpp) and the public methods (vocab.cpp). Not part of the interface.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vocab/pretokenizer.h"
#include "vocab/vocab.h"

namespace mw {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Byte trie of the special tokens' texts, to find which of them occur in a text in one pass.
class SpecialTokenTrie {
  public:
    void add(std::string_view text, int32_t index) {
        if (text.empty()) return;
        if (token_at_.empty()) token_at_.push_back(-1);  // the root
        starts_[uint8_t(text[0])] = true;
        uint32_t node = 0;
        for (const char c : text) {
            const auto [it, added] = edges_.emplace(key(node, c), uint32_t(token_at_.size()));
            if (added) token_at_.push_back(-1);
            node = it->second;
        }
        token_at_[node] = index;
    }

    // Sets occurs[index] for every added text found in `text`.
    void mark_occurring(std::string_view text, std::vector<bool>& occurs) const {
        for (size_t p = 0; p < text.size(); ++p) {
            if (!starts_[uint8_t(text[p])]) continue;
            uint32_t node = 0;
            for (size_t q = p; q < text.size(); ++q) {
                const auto it = edges_.find(key(node, text[q]));
                if (it == edges_.end()) break;
                node = it->second;
                if (token_at_[node] >= 0) occurs[size_t(token_at_[node])] = true;
            }
        }
    }

  private:
    static uint64_t key(uint32_t node, char c) { return (uint64_t(node) << 8) | uint8_t(c); }
    std::unordered_map<uint64_t, uint32_t> edges_;  // (node, byte) -> child node
    std::vector<int32_t> token_at_;                 // node -> index of the text ending there
    std::array<bool, 256> starts_{};
};

struct Vocab::Impl {
    struct Token {
        std::string text;
        float score = 0.0f;
        uint32_t attr = token_attr_normal;
    };

    // A BPE merge: the pair (left, right) becomes `result`; lower rank merges first.
    struct Merge {
        int32_t rank;
        int32_t result;
    };

    std::string file_name;
    VocabType type = VocabType::spm;
    std::string model;
    std::string pre;

    std::vector<Token> tokens;
    std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;
    size_t max_token_length = 0;  // bytes

    // BPE
    std::unordered_map<uint64_t, Merge> merges;  // key: (left << 32) | right
    std::unique_ptr<const tokenizer::PreTokenizer> pre_tokenizer;
    bool ignore_merges = false;  // a word that is a token is taken whole
    // SentencePiece-style BPE (Gemma 4, PreTokenizerConfig::spm_style): spaces are escaped to
    // "▁", words are raw UTF-8, byte fallback uses byte_tokens ("<0xXX>").
    bool spm_style = false;

    // SPM and SentencePiece-style BPE: the token for each byte of byte fallback (kNoToken when
    // the vocab lacks it).
    std::array<int32_t, 256> byte_tokens{};
    // SPM: no token has "▁" after another character, so words merge independently.
    bool spm_words_are_independent = false;

    int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken;
    int32_t unk = kNoToken, sep = kNoToken, pad = kNoToken, mask = kNoToken;
    int32_t newline = kNoToken;
    int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken;
    int32_t fim_pad = kNoToken, fim_rep = kNoToken, fim_sep = kNoToken;
    bool add_bos = false;
    bool add_eos = false;
    bool add_sep = false;
    bool add_space_prefix = false;
    bool clean_spaces = false;
    bool wpm_lowercase = true;  // WordPiece normaliser options
    bool wpm_strip_accents = true;
    std::unordered_set<int32_t> eog;

    // Control, user-defined and unknown tokens, longest text first (ties: lower id first):
    // the order in which text is searched for them.
    std::vector<int32_t> special_tokens;
    SpecialTokenTrie special_trie;  // over special_tokens (index into it)

    int32_t find(std::string_view text) const {
        const auto it = ids.find(text);
        return it == ids.end() ? kNoToken : it->second;
    }
    bool valid(int32_t id) const { return id >= 0 && size_t(id) < tokens.size(); }
    uint32_t attr(int32_t id) const { return tokens[size_t(id)].attr; }
};

// Splits text at special tokens and tokenizes the pieces (vocab.cpp).
std::vector<int32_t> tokenize(const Vocab::Impl& vocab, std::string_view text, bool add_special,
                              bool parse_special);

namespace tokenizer {

// Each appends the ids of one piece of raw text (no special tokens in it) to `out`.
void tokenize_spm(const Vocab::Impl& vocab, std::string_view text, std::vector<int32_t>& out);
void tokenize_bpe(const Vocab::Impl& vocab, std::string_view text, std::vector<int32_t>& out);
void tokenize_wpm(const Vocab::Impl& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace tokenizer

}  // namespace mw
