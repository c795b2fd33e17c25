// The three tokenizer algorithms, each on one piece of raw text that holds no special tokens.
// They follow llama.cpp's llm_tokenizer_{spm,bpe,wpm}_session step for step, since the token
// ids must match; the data structures differ (ids instead of strings where that is equivalent).
#include <algorithm>
#include <unordered_map>

#include "vocab/unicode.h"
#include "vocab/vocab_impl.h"

namespace mw::tokenizer {

namespace {

const std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// A run of bytes of the text being merged; merged-away symbols have length 0.
struct Symbol {
    int prev;
    int next;
    uint32_t begin;
    uint32_t length;
    int32_t id;  // BPE only: the token the symbol spells, or kNoToken
};

// Cuts text into symbols of one UTF-8 character each, judged by the lead byte only (a
// truncated sequence at the end is shortened).
std::vector<Symbol> split_characters(std::string_view text) {
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) {
        const size_t length =
            std::min(unicode::sequence_length(uint8_t(text[offset])), text.size() - offset);
        const int index = int(symbols.size());
        symbols.push_back({index - 1, offset + length == text.size() ? -1 : index + 1,
                           uint32_t(offset), uint32_t(length), kNoToken});
        offset += length;
    }
    return symbols;
}

void unlink_right(std::vector<Symbol>& symbols, int left, int right) {
    Symbol& l = symbols[size_t(left)];
    Symbol& r = symbols[size_t(right)];
    l.length += r.length;
    r.length = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[size_t(r.next)].prev = left;
}

// WordPiece's CJK ideograph ranges (one word per character). The 0x2B920 start instead of
// 0x2B820 is HF BERT's, kept by llama.cpp.
bool is_chinese_char(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Token ids of repeated pieces of the text (words mostly), valid during one tokenize call.
class PieceCache {
  public:
    // Appends the cached ids of `piece` to `out`; false when the piece is new.
    bool append(std::string_view piece, std::vector<int32_t>& out) const {
        const auto it = ranges_.find(piece);
        if (it == ranges_.end()) return false;
        out.insert(out.end(), ids_.begin() + it->second.first,
                   ids_.begin() + it->second.first + it->second.second);
        return true;
    }
    // Remembers the ids out[from..] for `piece`, which must outlive the cache.
    void store(std::string_view piece, const std::vector<int32_t>& out, size_t from) {
        ranges_.emplace(piece, std::make_pair(ids_.size(), out.size() - from));
        ids_.insert(ids_.end(), out.begin() + std::ptrdiff_t(from), out.end());
    }

  private:
    std::unordered_map<std::string_view, std::pair<size_t, size_t>> ranges_;
    std::vector<int32_t> ids_;
};

}  // namespace

// SentencePiece BPE: start from characters and repeatedly merge the adjacent pair whose
// concatenation is the highest-scoring token (leftmost on ties). Characters that never became
// a token come out as byte tokens.
//
// llama.cpp merges over the whole text at once. Where no token contains "▁" after another
// character (true of the Llama vocabularies), no merge can cross the start of a run of spaces,
// so each word with its leading spaces is merged on its own: the same result, found faster,
// and repeated words are looked up.
void tokenize_spm(const Vocab::Impl& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::vector<Symbol> symbols = split_characters(text);
    if (symbols.empty()) return;

    struct Bigram {
        float score;
        int left;
        int right;
        uint32_t length;
    };
    auto lower_priority = [](const Bigram& a, const Bigram& b) {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::vector<Bigram> heap;

    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[size_t(left)];
        const uint32_t length = l.length + symbols[size_t(right)].length;
        const int32_t id = vocab.find(text.substr(l.begin, length));
        if (id == kNoToken) return;
        heap.push_back({vocab.tokens[size_t(id)].score, left, right, length});
        std::push_heap(heap.begin(), heap.end(), lower_priority);
    };

    // Merges the symbols [first, last) as one sequence and appends their ids.
    auto merge_run = [&](int first, int last) {
        for (int i = first; i < last; ++i) {
            symbols[size_t(i)].prev = i == first ? -1 : i - 1;
            symbols[size_t(i)].next = i + 1 == last ? -1 : i + 1;
        }
        heap.clear();
        for (int i = first + 1; i < last; ++i) try_add(i - 1, i);
        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), lower_priority);
            const Bigram bigram = heap.back();
            heap.pop_back();
            const Symbol& l = symbols[size_t(bigram.left)];
            const Symbol& r = symbols[size_t(bigram.right)];
            // Stale: one side was merged into something else since the pair was queued.
            if (l.length == 0 || r.length == 0 || l.length + r.length != bigram.length) continue;
            unlink_right(symbols, bigram.left, bigram.right);
            try_add(symbols[size_t(bigram.left)].prev, bigram.left);
            try_add(bigram.left, symbols[size_t(bigram.left)].next);
        }
        for (int i = first; i != -1; i = symbols[size_t(i)].next) {
            const Symbol& s = symbols[size_t(i)];
            const std::string_view piece = text.substr(s.begin, s.length);
            const int32_t id = vocab.find(piece);
            if (id != kNoToken) {
                out.push_back(id);
                continue;
            }
            // Only a single character that is not a token gets here (merges make tokens).
            for (const char c : piece) {
                const int32_t byte_id = vocab.byte_tokens[uint8_t(c)];
                if (byte_id != kNoToken) {
                    out.push_back(byte_id);
                } else if (vocab.unk != kNoToken) {
                    out.push_back(vocab.unk);  // llama.cpp throws here; a vocab without bytes
                }
            }
        }
    };

    const int n = int(symbols.size());
    if (!vocab.spm_words_are_independent) {
        merge_run(0, n);
        return;
    }
    auto is_space = [&](int i) {
        const Symbol& s = symbols[size_t(i)];
        return text.compare(s.begin, s.length, kSpaceSymbol) == 0;
    };
    PieceCache cache;
    int first = 0;
    for (int i = 1; i <= n; ++i) {
        if (i < n && !(is_space(i) && !is_space(i - 1))) continue;
        const uint32_t begin = symbols[size_t(first)].begin;
        const std::string_view word = text.substr(
            begin, symbols[size_t(i - 1)].begin + symbols[size_t(i - 1)].length - begin);
        if (!cache.append(word, out)) {
            const size_t from = out.size();
            merge_run(first, i);
            cache.store(word, out, from);
        }
        first = i;
    }
}

// Byte-level BPE: pre-tokenize into words, then in each word repeatedly apply the
// lowest-ranked merge among adjacent pairs (leftmost on ties). SentencePiece-style BPE (Gemma 4)
// is the same on raw UTF-8 whose spaces the caller escaped.
void tokenize_bpe(const Vocab::Impl& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::vector<std::string> words;
    vocab.pre_tokenizer->split(text, words);

    struct Bigram {
        int32_t rank;
        int left;
        int right;
        int32_t left_id;
        int32_t right_id;
        int32_t result;
    };
    auto lower_priority = [](const Bigram& a, const Bigram& b) {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    };
    std::vector<Bigram> heap;

    auto merge_word = [&](const std::string& word) {
        // Gemma 4's vocab has tokens for runs of newlines that its merges do not build.
        const bool newline_run =
            vocab.spm_style && word.find_first_not_of('\n') == std::string::npos;
        if (vocab.ignore_merges || newline_run) {
            const int32_t id = vocab.find(word);
            if (id != kNoToken) {
                out.push_back(id);
                return;
            }
        }
        std::vector<Symbol> symbols = split_characters(word);
        for (Symbol& s : symbols)
            s.id = vocab.find(std::string_view(word).substr(s.begin, s.length));

        heap.clear();
        auto try_add = [&](int left, int right) {
            if (left < 0 || right < 0) return;
            const int32_t a = symbols[size_t(left)].id, b = symbols[size_t(right)].id;
            if (a == kNoToken || b == kNoToken) return;
            const auto it = vocab.merges.find((uint64_t(uint32_t(a)) << 32) | uint32_t(b));
            if (it == vocab.merges.end()) return;
            heap.push_back({it->second.rank, left, right, a, b, it->second.result});
            std::push_heap(heap.begin(), heap.end(), lower_priority);
        };
        for (size_t i = 1; i < symbols.size(); ++i) try_add(int(i - 1), int(i));

        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), lower_priority);
            const Bigram bigram = heap.back();
            heap.pop_back();
            Symbol& l = symbols[size_t(bigram.left)];
            const Symbol& r = symbols[size_t(bigram.right)];
            // Stale: a side changed (a symbol's token changes with every merge it takes part in).
            if (l.length == 0 || r.length == 0 || l.id != bigram.left_id ||
                r.id != bigram.right_id) {
                continue;
            }
            unlink_right(symbols, bigram.left, bigram.right);
            l.id = bigram.result;
            try_add(l.prev, bigram.left);
            try_add(bigram.left, l.next);
        }

        for (const Symbol& s : symbols) {
            if (s.length == 0) continue;
            if (s.id != kNoToken) {
                out.push_back(s.id);
                continue;
            }
            // A character the vocab lacks: its bytes, where those are tokens themselves (as
            // "<0xXX>" in SentencePiece style).
            for (uint32_t i = s.begin; i < s.begin + s.length; ++i) {
                const int32_t id = vocab.spm_style
                                       ? vocab.byte_tokens[uint8_t(word[i])]
                                       : vocab.find(std::string_view(word).substr(i, 1));
                if (id != kNoToken) out.push_back(id);
            }
        }
    };

    PieceCache cache;
    for (const std::string& word : words) {
        if (word.empty() || cache.append(word, out)) continue;
        const size_t from = out.size();
        merge_word(word);
        cache.store(word, out, from);
    }
}

namespace {

// BERT's basic tokenizer as llama.cpp implements it: one-codepoint NFD, drop accents and
// control characters, lowercase, split on whitespace and around punctuation, ASCII symbols and
// CJK ideographs.
std::vector<std::string> wordpiece_words(std::string_view text, bool lowercase,
                                         bool strip_accents) {
    std::vector<std::string> words(1);
    for (uint32_t cpt : unicode::decode_utf8(text)) {
        if (strip_accents) cpt = unicode::nfd_first(cpt);
        const unicode::CodepointInfo ci = unicode::info(cpt);
        if (ci.whitespace) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        if (cpt == 0 || cpt == unicode::kReplacementChar || ci.is_control()) continue;
        if (strip_accents && ci.is_mark()) continue;
        const std::string s = unicode::encode_utf8(lowercase ? unicode::to_lower(cpt) : cpt);
        if (ci.is_punctuation() || (cpt < 0x7F && ci.is_symbol()) || is_chinese_char(cpt)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = s;
            words.emplace_back();
        } else {
            words.back() += s;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

// WordPiece: each word, with the "▁" that marks a word start, is cut greedily into the
// longest tokens from the left; a word with an uncuttable rest becomes one unknown token.
void tokenize_wpm(const Vocab::Impl& vocab, std::string_view text, std::vector<int32_t>& out) {
    for (const std::string& word :
         wordpiece_words(text, vocab.wpm_lowercase, vocab.wpm_strip_accents)) {
        const std::string marked = "\xE2\x96\x81" + word;
        const size_t n = marked.size();
        const size_t word_start = out.size();
        for (size_t i = 0; i < n; ++i) {
            bool matched = false;
            for (size_t j = std::min(n, i + vocab.max_token_length + 1); j > i; --j) {
                const int32_t id = vocab.find(std::string_view(marked).substr(i, j - i));
                if (id != kNoToken) {
                    out.push_back(id);
                    matched = true;
                    i = j - 1;
                    break;
                }
            }
            if (!matched) {
                out.resize(word_start);
                break;
            }
        }
        if (out.size() == word_start && vocab.unk != kNoToken) out.push_back(vocab.unk);
    }
}

}  // namespace mw::tokenizer
