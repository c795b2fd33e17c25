/*
 * memwall: run large language models on devices under the memory wall.
 *
 * The public C API of libmemwall, for apps (JNI, Swift, C, C++). Everything else in the library
 * is private. Conventions:
 * - Functions that can fail return an mw_status; on failure, mw_last_error() returns a message
 *   naming the file, field and value at fault (thread-local, valid until the next failing call
 *   on the same thread). No function aborts the process on bad input.
 * - Objects are opaque; each *_create / *_load has a matching *_free that accepts NULL.
 * - Parameter structs are filled with defaults by their *_default_params() function; set only
 *   the fields you need. That function is inline: it sets the first field, struct_size, to the
 *   struct's size in this header, and the library reads no more than that, so an app built
 *   against an older header keeps working with a newer library (the fields it does not know
 *   take their defaults), and one built against a newer header is refused with
 *   MW_ERR_INVALID_ARGUMENT instead of misread. A struct not filled by *_default_params() is
 *   refused too. The soname changes only when the ABI breaks (docs/c-api.md).
 * - Token ids are int32; text is UTF-8 and passed with an explicit length.
 */
#ifndef MEMWALL_H
#define MEMWALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMWALL_API_VERSION 14

#if defined(_WIN32)
#define MW_API __declspec(dllexport)
#else
#define MW_API __attribute__((visibility("default")))
#endif

typedef int32_t mw_token;
typedef struct mw_model mw_model;
typedef struct mw_context mw_context;
typedef struct mw_sampler mw_sampler;

typedef enum mw_status {
    MW_OK = 0,
    MW_ERR_INVALID_ARGUMENT = 1, /* the request is impossible (bad value, prompt too long) */
    MW_ERR_BAD_FILE = 2,         /* a model file is malformed */
    MW_ERR_IO = 3,               /* the OS refused: open, read, mmap */
    MW_ERR_UNSUPPORTED = 4,      /* well-formed but not supported (architecture, tensor type) */
    MW_ERR_OUT_OF_MEMORY = 5,    /* an allocation failed or the model does not fit */
    MW_ERR_CONTEXT_FULL = 6,     /* the KV cache has no room for the batch */
    MW_ERR_INTERNAL = 7,         /* a bug in memwall; please report it */
} mw_status;

/* Tensor / KV-cache types (ggml type ids, as in GGUF files). */
typedef enum mw_type {
    MW_TYPE_F32 = 0,
    MW_TYPE_F16 = 1,
    MW_TYPE_Q4_0 = 2,
    MW_TYPE_Q8_0 = 8,
    MW_TYPE_BF16 = 30,
} mw_type;

/* Message of the last failed call on this thread ("" if none). */
MW_API const char* mw_last_error(void);
/* The library's version, "0.2.0" (as in the pkg-config file; the soname is libmemwall.so.0.2). */
MW_API const char* mw_version(void);
/* A short description of the CPU features memwall's kernels use on this machine. */
MW_API const char* mw_system_info(void);

/* ---- Model ------------------------------------------------------------------------------ */

typedef struct mw_model_params {
    size_t struct_size; /* API 8: set by mw_model_default_params() (docs/c-api.md) */
    bool use_mmap;      /* map the file (default true); false reads it into memory */
    bool use_mlock;     /* lock the weights in RAM (default false); failure is reported by
                           mw_model_warning() */
    bool vocab_only;    /* load only the vocabulary (default false): tokenizing, no contexts */
    /* rewrite weights at load into layouts this CPU's kernels read faster (default true; those
       pages become the process's own instead of evictable page cache) */
    bool repack;
    /* API 4: bytes the process may use, its RSS and the page cache its reads of the model occupy
       (default 0: no budget). A mixture-of-experts model then keeps its dense part in memory
       and reads experts from the file into a cache of what the budget leaves; a budget too small
       for that fails with MW_ERR_OUT_OF_MEMORY and the numbers (docs/memory-budget.md). */
    uint64_t mem_budget;
    /* API 5: GPU offload through Vulkan (docs/gpu.md). The matrix products of the last
       n_gpu_layers layers run on GPU main_gpu (0: none, the default; more than the layer count:
       the output layer too, as llama.cpp's -ngl). Where there is no device, or a matrix's type
       has no shader, that part runs on the CPU with a warning (mw_model_warning,
       mw_model_gpu_report), unless gpu_required (default false) makes it an error. Not combined
       with mem_budget yet. */
    int32_t n_gpu_layers;
    int32_t main_gpu;
    bool gpu_required;
    /* API 8: offload to a device of type "cpu" (Mesa's llvmpipe/lavapipe, ~1000x slower than the
       CPU path). Default false: such a device is not used, with a warning, unless the environment
       has MEMWALL_GPU_ALLOW_CPU_DEVICE=1 (the tests do, to run the shaders on lavapipe). */
    bool gpu_allow_cpu_device;
    uint8_t api11_padding[6]; /* API 11: makes the struct grow past API 10's tail padding */
    /* API 11: keep Gemma 4's per-layer embedding table in memory (default false: it stays on
       storage, each token reading its row; also MEMWALL_PLE=resident). docs/memory-budget.md */
    bool ple_resident;
} mw_model_params;

MW_API void mw_model_params_init(mw_model_params* params, size_t struct_size);
static inline mw_model_params mw_model_default_params(void) {
    mw_model_params p;
    mw_model_params_init(&p, sizeof p);
    return p;
}
MW_API mw_status mw_model_load(const char* path, const mw_model_params* params, mw_model** out);
MW_API void mw_model_free(mw_model* model);

/* A non-fatal problem met while loading (e.g. mlock refused), or NULL. */
MW_API const char* mw_model_warning(const mw_model* model);
/* API 5: what went to the GPU: the device, the layers offloaded, the bytes on the device, and
 * every matrix that stayed on the CPU (one item per line); NULL when no offload was asked for. */
MW_API const char* mw_model_gpu_report(const mw_model* model);
/* API 5: the Vulkan devices of this machine as JSON: {"devices": [{"name", "type" (integrated,
 * discrete, virtual, cpu, other), "api_version", "heaps": [{"bytes", "device_local"}],
 * "unified", "subgroup_size", "fp16", "int8_dot", "host_import", "max_binding_range"}],
 * "error": why there are none, or ""}. Free with mw_free_string(). */
MW_API char* mw_gpu_devices_json(void);
/* general.architecture, e.g. "llama". */
MW_API const char* mw_model_arch(const mw_model* model);
/* A one-line description: name, architecture, size, type. */
MW_API const char* mw_model_desc(const mw_model* model);
MW_API int32_t mw_model_n_vocab(const mw_model* model);
MW_API int32_t mw_model_n_ctx_train(const mw_model* model);
MW_API int32_t mw_model_n_embd(const mw_model* model);
MW_API int32_t mw_model_n_layer(const mw_model* model);
MW_API uint64_t mw_model_n_params(const mw_model* model);
/* Bytes of weight data in the file. */
MW_API uint64_t mw_model_weight_bytes(const mw_model* model);
/* Weight bytes read to decode one token (MoE: the experts used only, on average). */
MW_API uint64_t mw_model_bytes_per_token(const mw_model* model);
/* Metadata value as text (numbers formatted, arrays abbreviated). Returns the full length,
 * or -1 if the key is absent; writes at most buf_size bytes including the NUL. */
MW_API int32_t mw_model_meta(const mw_model* model, const char* key, char* buf, size_t buf_size);

/* The expert cache of a model loaded with a memory budget (API 4). Counters are since loading,
 * over every context of the model. */
typedef struct mw_expert_cache_stats {
    uint64_t budget_bytes;   /* the model's mem_budget; 0: none (everything below is 0 then) */
    uint64_t resident_bytes; /* weight bytes kept in memory: all but the experts, or the file */
    uint32_t n_slots;        /* experts the cache holds (0: no cache, or no context yet) */
    uint64_t slot_bytes;     /* memory of one slot: one expert's gate, up and down */
    uint64_t experts_total;  /* MoE layers x experts */
    uint64_t acquires;       /* experts the forward passes used */
    uint64_t hits;           /* of those, already in the cache */
    uint64_t prefetched;     /* read ahead by the I/O thread, ready when needed */
    uint64_t waited;         /* read ahead, but still in flight when needed */
    uint64_t misses;         /* read when needed */
    uint64_t bytes_read;     /* from storage, for the cache */
    uint64_t predictable;    /* acquires in layers after a MoE layer (the prefetch can guess) */
    uint64_t predicted;      /* of those, guessed by applying the layer's router one layer early */
    bool direct_io;          /* reads bypass the page cache with O_DIRECT (else pread + fadvise) */
} mw_expert_cache_stats;
MW_API mw_status mw_model_expert_cache_stats(const mw_model* model, mw_expert_cache_stats* out);

/* The layer stream of a dense model loaded with a memory budget smaller than its weights
 * (API 7): its layers' matrices are read from storage into slots, the first ones that fit stay,
 * the rest take turns in two slots. Counters are since loading, over every context. */
typedef struct mw_layer_stream_stats {
    uint64_t budget_bytes;   /* the model's mem_budget; 0: none, or not a dense model */
    uint64_t resident_bytes; /* weight bytes kept in memory outside the layers' matrices */
    uint32_t n_layer;        /* layers */
    uint32_t n_slots;        /* layers the stream holds at once (0: no context yet) */
    uint32_t pinned;         /* of those, layers that stay once read */
    uint64_t slot_bytes;     /* memory of one slot: the largest layer's matrices */
    uint64_t acquires;       /* layers the forward passes used */
    uint64_t hits;           /* of those, already in memory */
    uint64_t prefetched;     /* read ahead by the I/O thread, ready when needed */
    uint64_t waited;         /* read ahead, but still in flight when needed */
    uint64_t misses;         /* read when needed */
    uint64_t bytes_read;     /* from storage */
    double wait_ms;          /* time the forward passes waited for reads */
    bool direct_io;          /* reads bypass the page cache with O_DIRECT (else pread + fadvise) */
} mw_layer_stream_stats;
MW_API mw_status mw_model_layer_stream_stats(const mw_model* model, mw_layer_stream_stats* out);

/* ---- Vocabulary ------------------------------------------------------------------------- */

/* Tokenizes `text` (UTF-8, text_len bytes). add_special adds BOS/EOS as the vocab says;
 * parse_special turns special-token text like "<s>" into its id. Returns the number of tokens,
 * or, when n_max is too small, minus the number needed (nothing is written then). */
MW_API int32_t mw_tokenize(const mw_model* model, const char* text, int32_t text_len,
                           mw_token* tokens, int32_t n_max, bool add_special, bool parse_special);
/* The text of one token. special: render control tokens (e.g. "<s>") instead of "".
 * Returns the number of bytes, or minus the size needed when buf_size is too small.
 * The piece may be an incomplete UTF-8 sequence; see mw_detokenizer for streaming. */
MW_API int32_t mw_token_to_piece(const mw_model* model, mw_token token, char* buf, int32_t buf_size,
                                 bool special);
MW_API mw_token mw_token_bos(const mw_model* model); /* -1 if none */
MW_API mw_token mw_token_eos(const mw_model* model); /* -1 if none */
/* End of generation: EOS, EOT, or another end token of the vocab. */
MW_API bool mw_token_is_eog(const mw_model* model, mw_token token);

/* Streaming detokenization that never splits a UTF-8 character. */
typedef struct mw_detokenizer mw_detokenizer;
MW_API mw_detokenizer* mw_detokenizer_create(const mw_model* model, bool special);
MW_API void mw_detokenizer_free(mw_detokenizer* d);
/* Appends a token; returns the complete UTF-8 text now available (may be ""), valid until the
 * next call. *len receives its length. */
MW_API const char* mw_detokenizer_push(mw_detokenizer* d, mw_token token, size_t* len);
/* Flushes what is held back (invalid trailing bytes come out as U+FFFD). */
MW_API const char* mw_detokenizer_flush(mw_detokenizer* d, size_t* len);

/* ---- Context: KV cache and decoding ----------------------------------------------------- */

typedef struct mw_context_params {
    size_t struct_size; /* API 8: set by mw_context_default_params() (docs/c-api.md) */
    uint32_t n_ctx;     /* KV cache size in tokens; 0 (default) = min(training context, 4096) */
    uint32_t n_batch;  /* largest batch decoded in one step (prompt chunks); default 512; 0 = 512 */
    int32_t n_threads; /* 0 (default) = physical performance cores; < 0 = try a few counts on this
                          model (a few decode steps each) and keep the fastest ("-t auto") */
    mw_type type_k;    /* KV cache key type: MW_TYPE_F16 (default), MW_TYPE_F32, MW_TYPE_BF16,
                          MW_TYPE_Q8_0 or MW_TYPE_Q4_0 (quantized: the head size must be a
                          multiple of 32) */
    mw_type type_v;    /* KV cache value type (same choices) */
    uint32_t n_seq_max; /* sequences the context holds at once (default 1); they share the n_ctx
                           positions of the KV cache, each may hold up to n_ctx */
} mw_context_params;

MW_API void mw_context_params_init(mw_context_params* params, size_t struct_size);
static inline mw_context_params mw_context_default_params(void) {
    mw_context_params p;
    mw_context_params_init(&p, sizeof p);
    return p;
}
MW_API mw_status mw_context_create(mw_model* model, const mw_context_params* params,
                                   mw_context** out);
MW_API void mw_context_free(mw_context* ctx);
MW_API uint32_t mw_context_n_ctx(const mw_context* ctx);
MW_API int32_t mw_context_n_threads(const mw_context* ctx);
/* Number of tokens in the KV cache of sequence 0 (the position of its next token). */
MW_API uint32_t mw_context_n_past(const mw_context* ctx);
/* Drops cached tokens of sequence 0 from position n_keep on (0 clears it). */
MW_API mw_status mw_context_truncate(mw_context* ctx, uint32_t n_keep);
/* Context shift of sequence 0, for generating past a full context: drops the cached tokens
 * [n_keep, n_keep + n_discard) and moves the later ones back by n_discard positions, re-rotating
 * their keys (RoPE), so decoding continues coherently at n_past - n_discard. Typical use when
 * the cache is full: n_discard = (n_past - n_keep) / 2. MW_ERR_INVALID_ARGUMENT, cache unchanged,
 * when n_keep + n_discard exceeds n_past. */
MW_API mw_status mw_context_shift(mw_context* ctx, uint32_t n_keep, uint32_t n_discard);

/* Runs the tokens through the model at the next positions of sequence 0 and appends them to its
 * KV cache. all_logits: keep logits for every token of the batch, else for the last one only.
 * Batches larger than n_batch are split internally. MW_ERR_CONTEXT_FULL when they do not fit. */
MW_API mw_status mw_decode(mw_context* ctx, const mw_token* tokens, int32_t n_tokens,
                           bool all_logits);
/* Logits (n_vocab floats) of token i of the last mw_decode or mw_decode_batch batch; i = -1
 * means the last token whose logits were kept. NULL if that row was not kept. */
MW_API const float* mw_get_logits(mw_context* ctx, int32_t i);

/* ---- Batches of several sequences ---------------------------------------------------------- */
/* A context created with n_seq_max > 1 holds that many independent sequences (conversations,
 * server slots) in one KV cache. A batch carries tokens of any of them, each with its position;
 * mw_decode_batch runs the whole batch as one forward pass, so the weights are read once for
 * every sequence: N streams decoding one token each cost little more than one. Attention of a
 * token sees only its own sequence. Each sequence is a contiguous history: a token must go at
 * its sequence's next position (truncate first to rewrite the end). */

typedef int32_t mw_seq_id;

typedef struct mw_batch {
    int32_t n_tokens; /* tokens in the batch */
    mw_token* token;
    int32_t* pos;      /* position of each token in its sequence; -1: the sequence's next */
    mw_seq_id* seq_id; /* its sequence, 0 .. n_seq_max - 1 */
    int8_t* logits;    /* non-zero: keep its logits, read with mw_get_logits(ctx, index) */
    int32_t capacity;  /* tokens the arrays hold (set by mw_batch_init) */
} mw_batch;

/* A batch with room for `capacity` tokens (arrays NULL and capacity 0 when it cannot be
 * allocated); free with mw_batch_free. */
MW_API mw_batch mw_batch_init(int32_t capacity);
MW_API void mw_batch_free(mw_batch* batch);
MW_API void mw_batch_clear(mw_batch* batch);
/* Appends a token; MW_ERR_INVALID_ARGUMENT when the batch is full. */
MW_API mw_status mw_batch_add(mw_batch* batch, mw_token token, int32_t pos, mw_seq_id seq,
                              bool logits);
/* Runs the batch (split at n_batch tokens internally). MW_ERR_INVALID_ARGUMENT for a bad token,
 * sequence or position; MW_ERR_CONTEXT_FULL when the cache has no room: nothing is changed. */
MW_API mw_status mw_decode_batch(mw_context* ctx, const mw_batch* batch);

MW_API uint32_t mw_context_n_seq_max(const mw_context* ctx);
/* Tokens sequence `seq` holds (the position of its next token); -1 for a bad id. */
MW_API int32_t mw_seq_n_past(const mw_context* ctx, mw_seq_id seq);
/* Copies the tokens of a sequence into `tokens`; returns their number, or minus the number
 * needed when n_max is too small (nothing written). */
MW_API int32_t mw_seq_tokens(const mw_context* ctx, mw_seq_id seq, mw_token* tokens, int32_t n_max);
/* Prefix reuse: how many leading tokens of `tokens` the sequence already holds. Truncate the
 * sequence to that and decode only the rest (keep at least one token to decode, for its
 * logits). -1 for a bad id. */
MW_API int32_t mw_seq_common_prefix(const mw_context* ctx, mw_seq_id seq, const mw_token* tokens,
                                    int32_t n_tokens);
/* Drops the tokens of a sequence from position n_keep on (0 clears it). */
MW_API mw_status mw_seq_truncate(mw_context* ctx, mw_seq_id seq, uint32_t n_keep);
/* dst becomes the first n tokens of src (a shared prefix: the KV cache pages are shared, not
 * recomputed or copied; a page is copied only when one of them writes into it). */
MW_API mw_status mw_seq_copy(mw_context* ctx, mw_seq_id src, mw_seq_id dst, uint32_t n);
/* Context shift of one sequence (as mw_context_shift). */
MW_API mw_status mw_seq_shift(mw_context* ctx, mw_seq_id seq, uint32_t n_keep, uint32_t n_discard);
/* KV cache use: positions held by all sequences (shared positions once) and the pool's size. */
MW_API uint32_t mw_context_kv_used(const mw_context* ctx);
MW_API uint32_t mw_context_kv_size(const mw_context* ctx);

/* ---- Sampling --------------------------------------------------------------------------- */

/* The defaults are llama.cpp's, except the seed: 0, so that the same program gives the same text
 * on every run. For different text each run, set a seed of your own (the memwall CLI draws one
 * from std::random_device and prints it). */
typedef struct mw_sampler_params {
    size_t struct_size;      /* API 8: set by mw_sampler_default_params() (docs/c-api.md) */
    float temperature;       /* default 0.8; <= 0: greedy (argmax, ties to the lowest id) */
    int32_t top_k;           /* default 40; <= 0: off */
    float top_p;             /* default 0.95; >= 1: off */
    float min_p;             /* default 0.05; <= 0: off */
    float repeat_penalty;    /* default 1: off */
    int32_t repeat_last_n;   /* tokens considered by the penalties (default 64; -1: all) */
    uint64_t seed;           /* default 0; same seed, same model, same prompt: same text */
    float frequency_penalty; /* OpenAI's (default 0: off): subtracted once per occurrence in the
                                last repeat_last_n tokens */
    float presence_penalty; /* OpenAI's (default 0: off): subtracted once for a token that occurs */
} mw_sampler_params;

MW_API void mw_sampler_params_init(mw_sampler_params* params, size_t struct_size);
static inline mw_sampler_params mw_sampler_default_params(void) {
    mw_sampler_params p;
    mw_sampler_params_init(&p, sizeof p);
    return p;
}
MW_API mw_sampler* mw_sampler_create(const mw_sampler_params* params);
MW_API void mw_sampler_free(mw_sampler* sampler);
/* Picks a token from the logits (not modified). */
MW_API mw_token mw_sampler_sample(mw_sampler* sampler, const float* logits, int32_t n_vocab);
/* Records a token (prompt or generated) for the repetition penalty. */
MW_API void mw_sampler_accept(mw_sampler* sampler, mw_token token);

/* ---- Speculative decoding --------------------------------------------------------------- */
/* A drafter proposes the next tokens cheaply; the target checks up to draft_max of them in one
 * forward pass (its weights read once for all) and keeps the accepted ones and one token of its
 * own. The text has exactly the distribution plain sampling gives (greedy: the same text). */

typedef enum mw_spec_type {
    MW_SPEC_DRAFT = 1,  /* a smaller model with the target's vocabulary (a context of its own) */
    MW_SPEC_NGRAM = 2,  /* n-gram lookup in the sequence's own tokens (prompt included) */
    MW_SPEC_ORACLE = 3, /* measurement device: proposes oracle_tokens[i] (the target's greedy
                           text, prompt included, from a run without speculation) with
                           probability oracle_p, a wrong token otherwise */
    MW_SPEC_MTP = 4,    /* API 13: the target's own MTP (next-n) head (Qwen3.5 files that have
                           one; draft_p_min applies); no draft context */
} mw_spec_type;

typedef struct mw_spec_params {
    size_t struct_size; /* API 10: set by mw_spec_default_params() (docs/c-api.md) */
    mw_spec_type type;  /* default MW_SPEC_NGRAM */
    int32_t draft_max;  /* tokens drafted per pass at most (default 8; >= 1) */
    int32_t draft_min;  /* fewer proposed: decode without them (default 0) */
    /* Draft model: stop drafting when its top token's probability is below this (default 0). */
    float draft_p_min;
    int32_t ngram_size_n; /* n-gram: tokens matched (default 3) */
    int32_t ngram_size_m; /* n-gram: tokens proposed after a match at most (default 16) */
    /* Oracle: the probability of proposing the right token, and the reference (copied). */
    float oracle_p;
    const mw_token* oracle_tokens;
    int32_t n_oracle_tokens;
    uint64_t seed; /* oracle's draws */
} mw_spec_params;

typedef struct mw_speculator mw_speculator;
typedef struct mw_spec_stats {
    int64_t n_passes;      /* verification passes (with drafts) */
    int64_t n_plain_steps; /* steps that decoded one token (nothing drafted, or no room) */
    int64_t n_drafted;     /* draft tokens checked */
    int64_t n_accepted;    /* of them accepted */
    int64_t n_generated;   /* tokens the steps produced */
    double draft_ms;       /* time drafting */
    double verify_ms;      /* time in verification passes, rollback included */
} mw_spec_stats;

MW_API void mw_spec_params_init(mw_spec_params* params, size_t struct_size);
static inline mw_spec_params mw_spec_default_params(void) {
    mw_spec_params p;
    mw_spec_params_init(&p, sizeof p);
    return p;
}
/* Speculation on sequence 0 of target. draft: a context on the draft model for MW_SPEC_DRAFT
 * (the speculator keeps it in step with the target; use it for nothing else; freed by the
 * caller after the speculator), NULL otherwise. MW_ERR_INVALID_ARGUMENT for draft_max < 1, a
 * draft model whose vocabulary differs from the target's, or a missing draft context. */
MW_API mw_status mw_speculator_create(mw_context* target, mw_context* draft,
                                      const mw_spec_params* params, mw_speculator** out);
MW_API void mw_speculator_free(mw_speculator* spec);
/* One step: decodes `pending` (the token sampled last, already given to mw_sampler_accept) with
 * the drafted tokens in one pass and writes to out the tokens that follow it, *n_out of them
 * (1 ..n_max): the accepted drafts, then the target's own token, which is the next pending one
 * (not decoded yet). Each is given to mw_sampler_accept already. An end-of-generation token ends
 * them (and is never decoded). Drafts fit the context's room: with none, pending is decoded
 * alone; a full context is MW_ERR_CONTEXT_FULL as for mw_decode. */
MW_API mw_status mw_speculator_step(mw_speculator* spec, mw_sampler* sampler, mw_token pending,
                                    int32_t n_max, mw_token* out, int32_t* n_out);
MW_API mw_spec_stats mw_speculator_stats(const mw_speculator* spec);
/* Expected tokens per verification pass when each draft is accepted with probability p and k
 * are drafted: (1 - p^(k+1)) / (1 - p). */
MW_API double mw_spec_expected_tokens(double p, int32_t k);

/* ---- Generation in one call ------------------------------------------------------------- */
/* mw_generate is the loop above (tokenize, decode, sample, decode, detokenize) for apps that need
 * nothing finer. The low-level calls stay available for everything else. */

/* Receives the generated text piece by piece as it becomes complete UTF-8 (never a split
 * character; len > 0, not NUL-terminated, valid during the call). Return false to stop. */
typedef bool (*mw_piece_fn)(void* user_data, const char* piece, size_t len);

typedef enum mw_stop_reason {
    MW_STOP_END_TOKEN = 0,    /* the model produced an end-of-generation token (not passed on) */
    MW_STOP_N_PREDICT = 1,    /* n_predict tokens were generated */
    MW_STOP_CONTEXT_FULL = 2, /* the context has no room for another token */
    MW_STOP_CALLBACK = 3,     /* the callback returned false */
} mw_stop_reason;

typedef struct mw_generate_params {
    size_t struct_size;  /* API 8: set by mw_generate_default_params() (docs/c-api.md) */
    int32_t n_predict;   /* tokens to generate at most; default -1: until an end token or a full
                            context; 0: decode the prompt only */
    bool add_special;    /* add BOS (and EOS) to the prompt as the vocab asks (default true; set
                            false when continuing a context) */
    bool parse_special;  /* special-token text in the prompt ("<|im_start|>") becomes its id
                            (default true) */
    bool render_special; /* pass control tokens' text on (default false: they render as "") */
    mw_sampler_params sampling; /* default mw_sampler_default_params() */
    mw_speculator* speculator;  /* API 10; default NULL; given: tokens come from its steps (on
                                   the same context) */
} mw_generate_params;

typedef struct mw_generate_result {
    int32_t n_prompt_tokens; /* tokens the prompt became */
    int32_t n_generated;     /* tokens generated and added to the context (the end token not) */
    mw_stop_reason stop;
} mw_generate_result;

MW_API void mw_generate_params_init(mw_generate_params* params, size_t struct_size);
static inline mw_generate_params mw_generate_default_params(void) {
    mw_generate_params p;
    mw_generate_params_init(&p, sizeof p);
    return p;
}
/* Tokenizes the prompt (UTF-8, prompt_len bytes), decodes it after what ctx already holds, then
 * samples a token, decodes it and passes its text to on_piece (may be NULL), until a stop reason.
 * Every token passed on stays in the context, so a later call continues from there; an empty
 * prompt continues from the context's last logits. The repetition penalty sees this call's
 * prompt and output. MW_ERR_CONTEXT_FULL, with nothing decoded, when the prompt does not fit.
 * out may be NULL. */
MW_API mw_status mw_generate(mw_context* ctx, const char* prompt, int32_t prompt_len,
                             const mw_generate_params* params, mw_piece_fn on_piece,
                             void* user_data, mw_generate_result* out);

/* ---- Measurements ----------------------------------------------------------------------- */

typedef struct mw_perf {
    double load_ms;   /* model load */
    double prompt_ms; /* time in batches of more than one token */
    double decode_ms; /* time in batches where each sequence decodes one token */
    int32_t n_prompt_tokens;
    int32_t n_decode_tokens;         /* of every sequence */
    uint64_t weights_bytes;          /* weight data (mapped or read) */
    uint64_t weights_resident_bytes; /* of which now in RAM */
    uint64_t kv_bytes;               /* KV cache allocation */
    uint64_t scratch_bytes;          /* activation buffers */
    uint64_t peak_rss_bytes;         /* of the process, from the OS */
    uint64_t rss_bytes;              /* of the process now, from the OS */
    uint64_t major_faults; /* page faults that read from storage (weights paged in), process */
    uint64_t minor_faults; /* page faults served from memory, process */
    uint64_t decode_weight_bytes; /* weight bytes read by the decode steps: every dense matrix,
                                     and (MoE) only the experts the router chose, once per step
                                     whatever the number of sequences; divide by
                                     n_decode_tokens for bytes per token */
    int32_t n_decode_steps;       /* decode steps (each of one token per sequence) */
} mw_perf;

MW_API mw_perf mw_context_perf(const mw_context* ctx);
MW_API void mw_context_perf_reset(mw_context* ctx);

/* The conditions behind a tok/s figure, stated beside it: "pp512 d0 t2 kv f16 no sampler",
 * "tg64 d12 t2 kv f16 temp 0.8 top-k 40 top-p 0.95 min-p 0.05". */
typedef struct mw_speed_conditions {
    int32_t n_prompt;    /* prompt tokens processed in batches ("pp"); 0: none */
    int32_t n_gen;       /* tokens generated one at a time ("tg"); 0: none; < 0: open-ended */
    int32_t n_depth;     /* tokens in the KV cache when the measurement began */
    int32_t n_depth_max; /* > n_depth: the cache grew to this (or shifted between the two) */
    int32_t n_threads;
    mw_type type_k;
    mw_type type_v;
    const mw_sampler_params* sampling; /* NULL: token ids were fed, no sampler ran */
} mw_speed_conditions;

/* Writes the label (NUL-terminated, truncated to buf_size); returns its full length. */
MW_API int32_t mw_speed_label(const mw_speed_conditions* conditions, char* buf, size_t buf_size);

/* ---- Pacing and sensors ------------------------------------------------------------------ */
/* Sensors are read from sysfs: /sys, or the folder $MEMWALL_SYSFS_ROOT names, laid out the same
 * way (tests, and replays of a phone's trace, use it): CPU frequency per core, thermal zones with
 * their types, energy (powercap RAPL package counters, else a battery's power_now or
 * current_now x voltage_now). A sensor that is absent or unreadable is reported as missing, never
 * an error; a sensor file holding garbage (empty, negative, not a number) is skipped with a
 * warning. */

/* The sensors now, as JSON (free with mw_free_string()): {"root", "cpus": [0, 1, ...],
 * "cpu_mhz": [...], "thermal_zones": [{"zone", "type", "celsius"}], "energy_source",
 * "missing": [...], "warnings": [...]}; unreadable values are null. */
MW_API char* mw_sensors_json(void);

/* Sets the threads ctx decodes with, 1 to the count it was created with (pacing backs off so). */
MW_API mw_status mw_context_set_threads(mw_context* ctx, int32_t n_threads);

/* A pacer decides, after each decoded token, how the next one runs: with how many threads and
 * after how long an idle gap. max_temp_c: at or above it, back off one level (one thread fewer,
 * down to min_threads; then idle gaps of 1/4 to 8 times the token's time), again at once while
 * the temperature still rises; recover one level per settle_s once hysteresis_c below it.
 * max_tps: token starts at least 1/max_tps apart (a steady rate instead of bursts). */
typedef struct mw_pacer mw_pacer;

typedef struct mw_pacer_params {
    size_t struct_size;    /* API 8: set by mw_pacer_default_params() (docs/c-api.md) */
    double max_temp_c;     /* limit for the hottest thermal zone, °C; <= 0: none */
    double hysteresis_c;   /* recover once this far below the limit (default 3) */
    double max_tps;        /* tokens per second at most; <= 0: none */
    const char* temp_zone; /* only zones whose type contains this text; NULL or "": all */
    int32_t max_threads;   /* 0: the context's thread count at the first mw_pacer_pace() */
    int32_t min_threads;   /* fewest threads a back-off leaves (default 1) */
    double settle_s;       /* time between two recovery steps (default 2) */
} mw_pacer_params;

typedef struct mw_pace {
    int32_t n_threads; /* threads for the next token */
    double sleep_s;    /* idle gap before the next token (mw_pacer_pace() has slept it) */
    double temp_c;     /* the temperature paced by; NaN when none was read */
    int32_t level;     /* back-off level: 0 is full speed */
    bool changed;      /* the level changed at this call: message says why */
    char message[256]; /* e.g. "46.0 °C >= 45.0 °C (thermal_zone0 cpu): back off to 1 thread" */
} mw_pace;

MW_API void mw_pacer_params_init(mw_pacer_params* params, size_t struct_size);
static inline mw_pacer_params mw_pacer_default_params(void) {
    mw_pacer_params p;
    mw_pacer_params_init(&p, sizeof p);
    return p;
}
/* Finds the thermal zones (params may be NULL: no limits, which paces nothing). */
MW_API mw_status mw_pacer_create(const mw_pacer_params* params, mw_pacer** out);
MW_API void mw_pacer_free(mw_pacer* pacer);
/* Why the pacer cannot do what it was asked (no readable thermal zone for max_temp_c), or NULL. */
MW_API const char* mw_pacer_warning(const mw_pacer* pacer);
/* Call after each token ctx decodes (out may be NULL): reads the clock and the sensors, decides,
 * sets ctx's threads and sleeps the gap. */
MW_API mw_status mw_pacer_pace(mw_pacer* pacer, mw_context* ctx, mw_pace* out);
/* The decision alone, for loops that apply it themselves and for tests: now_s on any monotonic
 * clock, temp_c the temperature to pace by or NaN to read the sensors. Nothing is slept. */
MW_API mw_status mw_pacer_decide(mw_pacer* pacer, double now_s, double temp_c, mw_pace* out);
/* One line for the end of a run: back-offs, recoveries, time backed off, the hottest reading,
 * tok/s over the wall time. Valid until the next call on the pacer. */
MW_API const char* mw_pacer_summary(mw_pacer* pacer);
/* Sensor warnings raised since the last call, one per line ("" if none); valid until the next
 * call on the pacer. */
MW_API const char* mw_pacer_take_warnings(mw_pacer* pacer);

/* Sustained speed: decode without pause (token ids in turn; a context shift keeping n_keep
 * tokens when the cache is full) from the context's current cache for duration_s, recording per
 * interval tok/s, CPU frequency per core, thermal zones, energy and RSS. */
typedef struct mw_sustained_sample {
    double t_s; /* end of the interval, seconds since the start */
    int32_t n_tokens;
    double tok_s;
    int32_t n_threads;
    double temp_c_max;   /* hottest thermal zone; NaN if none */
    double cpu_mhz_mean; /* NaN if no frequency could be read */
    double power_w;      /* mean over the interval; NaN without an energy sensor */
    uint64_t rss_bytes;
} mw_sustained_sample;

typedef struct mw_sustained_params {
    size_t struct_size;     /* API 8: set by mw_sustained_default_params() (docs/c-api.md) */
    double duration_s;      /* default 60 */
    double interval_s;      /* default 5 */
    const mw_token* tokens; /* ids decoded in turn (required) */
    int32_t n_tokens;
    uint32_t n_keep;               /* tokens each context shift keeps (default 0) */
    const mw_pacer_params* pacing; /* NULL: unpaced */
    const char* model_path;        /* recorded in the document (may be NULL) */
    /* Called after each interval (may be NULL); returning false stops the run there. */
    bool (*progress)(const mw_sustained_sample* sample, void* user_data);
    void* user_data;
} mw_sustained_params;

MW_API void mw_sustained_params_init(mw_sustained_params* params, size_t struct_size);
static inline mw_sustained_params mw_sustained_default_params(void) {
    mw_sustained_params p;
    mw_sustained_params_init(&p, sizeof p);
    return p;
}
/* The series and its summary as JSON (free with mw_free_string()); NULL on failure. Keys:
 * "conditions" (mw_speed_label), "sensors" {"cpus", "thermal_zones", "energy_source", "missing",
 * "warnings"}, "samples" [{"t_s", "seconds", "tokens", "tok_s", "n_past", "threads", "idle_s",
 * "cpu_mhz", "temp_c", "power_w", "energy_j", "rss_bytes"}], "summary" {"tok_s", "window_s",
 * "first_tok_s", "last_tok_s" (first and last min(60 s, half the run)), "drop_pct", "energy_j",
 * "j_per_token", "mean_power_w", "temp_c_max", ...}. */
MW_API char* mw_bench_sustained_json(mw_context* ctx, const mw_sustained_params* params);

/* ---- Charts ------------------------------------------------------------------------------ */

/* An SVG chart of a JSON document (free with mw_free_string()); NULL with mw_last_error() when
 * the document is not one of: a sustained bench (mw_bench_sustained_json: speed, temperature,
 * frequency and power over time); a plan (mw_plan_json: the decode roofline of each model); a bar
 * chart {"chart": "bars", "title", "subtitle": [...], "footer": [...], "panels": [{"title",
 * "y_label", "groups": [...], "series": [{"name", "values": [...]}]}]}. */
MW_API char* mw_chart_svg(const char* document_json);
/* ---- Chat: a conversation with the model ---------------------------------------------------- */
/* The history is rendered with the chat template each turn and only the new part is decoded
 * (the earlier turns stay in the KV cache). When it outgrows the context, the oldest turns are
 * dropped; the system prompt stays. */

typedef struct mw_chat mw_chat;

typedef struct mw_chat_params {
    size_t struct_size;         /* API 8: set by mw_chat_default_params() (docs/c-api.md) */
    const char* system_prompt;  /* NULL or "": none */
    const char* chat_template;  /* NULL: the file's tokenizer.chat_template; else a built-in name
                                   or template text */
    mw_sampler_params sampling; /* default: mw_sampler_default_params() */
    int32_t n_predict;          /* tokens per reply; -1 (default): until an end token */
    mw_pacer* pacer;            /* NULL (default): unpaced; else paced after every generated
                                   token (mw_pacer_pace); borrowed, must outlive the chat */
    const mw_spec_params* speculative; /* API 10; NULL (default): off; else replies decode
                                          speculatively (copied) */
    mw_model* draft_model; /* MW_SPEC_DRAFT: the draft model (borrowed, must outlive the chat;
                              the chat makes its context) */
    /* API 14: more chat template variables, a JSON object's text (e.g. {"enable_thinking":
       false}); NULL (default): none. A reply's reasoning (Qwen3.5's <think>, Gemma 4's thought
       channel, gpt-oss's analysis channel) is split from the answer, which alone goes to
       mw_chat_send's on_text; on_reasoning (NULL: not shown) receives the reasoning as it
       streams, returning false stops the reply. */
    const char* template_kwargs;
    mw_piece_fn on_reasoning;
    void* reasoning_user_data;
} mw_chat_params;

typedef struct mw_chat_reply {
    int32_t n_prompt_tokens; /* the rendered conversation */
    int32_t n_reused_tokens; /* of them, already in the KV cache (not decoded again) */
    int32_t n_generated;
    int32_t n_dropped_turns; /* oldest messages dropped to fit the context */
    double prompt_ms;        /* rendering and decoding the new part of the prompt */
    double decode_ms;        /* generating the reply */
    bool cancelled;          /* stopped by mw_chat_cancel or the callback */
    bool context_full;       /* stopped at a full context */
} mw_chat_reply;

/* Receives the reply's text as it is generated (complete UTF-8 characters); returning false stops
 * the reply. */

MW_API void mw_chat_params_init(mw_chat_params* params, size_t struct_size);
static inline mw_chat_params mw_chat_default_params(void) {
    mw_chat_params p;
    mw_chat_params_init(&p, sizeof p);
    return p;
}
/* A chat with its own context (ctx_params; NULL: the defaults). The model must outlive it. */
MW_API mw_status mw_chat_create(mw_model* model, const mw_context_params* ctx_params,
                                const mw_chat_params* params, mw_chat** out);
/* Speculative decoding's counters over the chat's replies so far (zeros when it is off). */
MW_API mw_spec_stats mw_chat_spec_stats(const mw_chat* chat);
MW_API void mw_chat_free(mw_chat* chat);
/* Adds the user's message and generates the reply. reply may be NULL. */
MW_API mw_status mw_chat_send(mw_chat* chat, const char* text, size_t text_len, mw_piece_fn on_text,
                              void* user_data, mw_chat_reply* reply);
/* Stops the reply being generated; async-signal-safe (for a SIGINT handler). */
MW_API void mw_chat_cancel(mw_chat* chat);
/* Forgets the conversation (the system prompt stays). */
MW_API void mw_chat_reset(mw_chat* chat);

/* ---- HTTP server (OpenAI-compatible) -------------------------------------------------------- */
/* POST /v1/chat/completions and /v1/completions (streamed as server-sent events or not),
 * GET /v1/models, /health, /metrics (Prometheus) and / (a chat page). The context's n_seq_max
 * sequences are the slots: requests are batched continuously (they join and leave the running
 * batch between forward steps), a new request reuses the longest cached prefix of its prompt,
 * and each slot may hold n_ctx / n_seq_max positions. Binds 127.0.0.1 unless told otherwise;
 * with an API key, every route but /health and / needs "Authorization: Bearer KEY". */

typedef struct mw_server mw_server;

typedef struct mw_server_params {
    size_t struct_size;         /* API 8: set by mw_server_default_params() (docs/c-api.md) */
    const char* host;           /* address to bind (default "127.0.0.1") */
    int32_t port;               /* default 8080; 0: any free port (mw_server_port) */
    const char* api_key;        /* NULL or "": no key */
    const char* model_name;     /* the id GET /v1/models lists; NULL: "memwall" */
    const char* chat_template;  /* NULL: the file's tokenizer.chat_template; else a built-in
                                   name or template text */
    int32_t queue_max;          /* requests waiting for a slot before 503 (default 64) */
    double timeout_s;           /* per request, from its arrival (default 600) */
    uint64_t max_body_bytes;    /* larger bodies get 413 (default 8 MiB) */
    int32_t max_tokens;         /* most tokens a request may ask for; -1: the slot's context */
    mw_sampler_params sampling; /* defaults for what a request does not give */
    mw_pacer* pacer; /* NULL (default): unpaced; else paced after every forward step, all slots
                        together (one device, one temperature); borrowed, outlives the server */
    const char* cors_origins; /* NULL (default): browsers may call the server only from loopback
                                 origins (http://localhost:*, http://127.0.0.1:*, ...); else also
                                 from these, comma-separated ("https://app.example,http://x:3000",
                                 or "*" for any). Other origins, and Host names of a loopback
                                 server that are not addresses or localhost (DNS rebinding),
                                 get 403. */
    double header_timeout_s;  /* a request's header must be complete this many seconds after
                                 the connection (or the previous reply); default 10 */
    int32_t max_connections;  /* open at once, in all (default 1024; fewer when the process
                                 may not open that many descriptors) */
    int32_t max_connections_per_address; /* open at once from one client address (default 256) */
    int32_t max_header_bytes; /* request line and header fields together (default 8192; each
                                 kept-alive connection holds that much); larger: refused */
    /* API 9: one line per answered request: UTC time, client address, method, path, status,
       prompt and completion tokens (generations), milliseconds from the header to the end. */
    int32_t log_format; /* MW_SERVER_LOG_NONE (default), _TEXT, or _JSON (an object per line) */
    void (*log)(const char* line, void* user); /* NULL (default): to stderr; else called with
                                                  each line (no newline), from server threads */
    void* log_user;
    /* API 11: speculative decoding in every slot (docs/speculative.md): NULL (default) off; else
       (copied) each slot drafts up to draft_max tokens a step, checked in the same forward pass
       as the other slots' tokens. MW_SPEC_NGRAM or MW_SPEC_DRAFT with draft_model (borrowed,
       outlives the server; the server makes its context, one sequence per slot, and refuses a
       draft whose vocabulary differs from the model's). Responses then carry timings.draft_n
       and draft_n_accepted, /metrics the draft counters. */
    const mw_spec_params* speculative;
    mw_model* draft_model;
    /* API 14: chat template variables for every chat request, a JSON object's text (a request's
       chat_template_kwargs win key by key); NULL (default): none. */
    const char* template_kwargs;
    /* MW_REASONING_AUTO (default): replies split into reasoning_content, content and tool_calls
       by the template's markers (docs/server.md); MW_REASONING_NONE: all of the reply's text in
       content, as generated (llama-server's --reasoning-format none). */
    int32_t reasoning_format;
} mw_server_params;

enum { MW_SERVER_LOG_NONE = 0, MW_SERVER_LOG_TEXT = 1, MW_SERVER_LOG_JSON = 2 };
enum { MW_REASONING_AUTO = 0, MW_REASONING_NONE = 1 };

MW_API void mw_server_params_init(mw_server_params* params, size_t struct_size);
static inline mw_server_params mw_server_default_params(void) {
    mw_server_params p;
    mw_server_params_init(&p, sizeof p);
    return p;
}
/* Creates a context of ctx_params on the model (which must outlive the server) and binds the
 * socket: MW_ERR_IO naming the address when it is taken. */
MW_API mw_status mw_server_create(mw_model* model, const mw_context_params* ctx_params,
                                  const mw_server_params* params, mw_server** out);
/* The port bound (useful with port 0). */
MW_API int32_t mw_server_port(const mw_server* server);
/* API 11: speculative decoding's counters over every slot so far (zeros when it is off):
 * n_passes are slot steps with drafts, n_plain_steps slot steps without; thread-safe. */
MW_API mw_spec_stats mw_server_spec_stats(const mw_server* server);
/* Serves until mw_server_stop; returns when the last connection is closed. */
MW_API mw_status mw_server_run(mw_server* server);
/* Thread-safe (call it from a signal-handling thread, not a signal handler): stops taking
 * requests, lets running ones finish for up to grace_s seconds, cancels the rest, and makes
 * mw_server_run return. */
MW_API void mw_server_stop(mw_server* server, double grace_s);
MW_API void mw_server_free(mw_server* server);

/* ---- Planning: will a model fit, and how fast will it run -------------------------------- */
/* The functions returning char* return a JSON document (UTF-8, NUL-terminated) that the caller
 * frees with mw_free_string(); NULL on failure, with mw_last_error() saying why. The keys are
 * listed in docs/plan.md. */

MW_API void mw_free_string(char* s);

typedef struct mw_probe_params {
    size_t struct_size; /* API 8: set by mw_probe_default_params() (docs/c-api.md) */
    int32_t n_threads;  /* threads for the measurements; 0 (default) = the engine's default */
    double seconds;     /* measurement budget (at least 5 passes of each kernel); <= 0 = 1.5 s */
    bool measure; /* default true; false: only facts (CPU, SIMD, caches, RAM), nothing measured */
    bool write_cache;     /* save the measurement as this machine's device for plans, unless it
                             looks contended (docs/plan.md); default false */
    bool force;           /* with write_cache: save even a measurement that looks contended */
    uint64_t array_bytes; /* bytes per array of the bandwidth measurement; 0 = sized from the
                             last-level cache (3 arrays, together 4 x the cache, or 1 GiB) */
    /* API 6: measure the storage read bandwidth of this folder too (NULL, the default: not
       measured): a temporary file of storage_bytes (0 = 256 MiB) written there, read back with
       the page cache bypassed, sequentially and at random in 256 KiB - 4 MiB reads, and deleted.
       Plans under a memory budget use the saved figure (docs/memory-budget.md). */
    const char* storage_dir;
    uint64_t storage_bytes;
} mw_probe_params;

MW_API void mw_probe_params_init(mw_probe_params* params, size_t struct_size);
static inline mw_probe_params mw_probe_default_params(void) {
    mw_probe_params p;
    mw_probe_params_init(&p, sizeof p);
    return p;
}
/* This machine: CPU, SIMD features, caches, RAM and memory available now, measured read and
 * triad memory bandwidth (multi-threaded; median, spread and outliers of several passes), the
 * engine's matmul throughput, whether the measurement looks contended, and what is saved; with
 * storage_dir, "storage": that folder's sequential and random read bandwidth. */
MW_API char* mw_probe_json(const mw_probe_params* params);
/* Forgets the saved measurement of this machine (and bench's figures). *removed (may be NULL)
 * says whether there was one. */
MW_API mw_status mw_device_reset(bool* removed);

/* Memory and speed plans for models x devices x quantizations. The request is JSON, every key
 * optional (none: the seeds' case, a 35B dense model and a 30B MoE on 12/16/24 GB phones):
 * {"models": [{"file": PATH} | {"url": URL} | {"hf_config": PATH}
 *             | {"catalogue": NAME or "all"}],
 *  "devices": ["this" | PROFILE | {"ram": "16G", "bandwidth": "68G", "os_reserve": "4G"}],
 *  "ctx": 4096, "kv_type": "f16", "quants": ["Q4_K_M", ...], "batch": 512, "threads": 0,
 *  "best_only": false}
 * A GGUF file is read up to its header only: a partial download works; a URL (see mw_pull) is
 * read with range requests, and its model gains "remote": {"url", "resolved_url", "file_bytes",
 * "bytes_read", "requests", "etag", "sha256"}. */
MW_API char* mw_plan_json(const char* request_json);
/* The built-in model catalogue and device profiles. */
MW_API char* mw_plan_catalogue_json(void);

typedef enum mw_fit_verdict {
    MW_FIT_YES = 0,   /* fits with room to spare */
    MW_FIT_TIGHT = 1, /* fits, with less than 10 % to spare */
    MW_FIT_NO = 2,    /* does not fit */
} mw_fit_verdict;

typedef struct mw_fit {
    mw_fit_verdict verdict;
    uint32_t n_ctx; /* the context size planned (0 in the params resolved as the runtime does) */
    uint64_t weights_bytes;
    uint64_t kv_bytes;
    uint64_t compute_bytes;
    uint64_t overhead_bytes;
    uint64_t total_bytes;     /* the predicted peak RSS */
    uint64_t available_bytes; /* memory available now */
    char message[2048];       /* the numbers; when it does not fit, the nearest configurations
                                 that do (smaller context, quantized KV cache, smaller quant) */
} mw_fit;

/* Refuse or fit: plans the model file (its header only; a path or a URL, see mw_pull) with these
 * context parameters against the memory available now, before anything is allocated. MW_OK with
 * *out filled in (check out->verdict); an error status when the file cannot be read. */
MW_API mw_status mw_check_fit(const char* path, const mw_context_params* params, mw_fit* out);
/* API 12: the same with a draft model for speculative decoding (-md) drafting up to draft_max
 * (>= 1) tokens a pass: the draft's weights and its context (the target's resolved size, batch,
 * threads and KV type, params->n_seq_max sequences: one per server slot) count too, with each
 * sequence's saved recurrent state and the target's logits for every drafted token. The fields
 * of *out are the target's; total_bytes and the verdict are the pair's, and the message names
 * both files and sizes. A NULL draft_path: speculation without a draft model (n-gram lookup),
 * the target's saved states and logits rows alone. */
MW_API mw_status mw_check_fit_draft(const char* path, const char* draft_path, int32_t draft_max,
                                    const mw_context_params* params, mw_fit* out);
/* API 13: the same with the file's own MTP head drafting (MW_SPEC_MTP) up to draft_max tokens a
 * pass: the head's KV cache (one attention layer), its scratch, the target's hidden states and
 * a row of logits per drafted token count in the target's figures. A file without an MTP head
 * plans as mw_check_fit. */
MW_API mw_status mw_check_fit_mtp(const char* path, int32_t draft_max,
                                  const mw_context_params* params, mw_fit* out);

/* For bench: the speeds measured on this machine, recorded so that plans for this device use
 * the efficiency this engine reaches here. decode_bytes_per_token: the weight bytes each decode
 * step read; prompt_flops_per_token: 2 x the weights one token multiplies (2 x
 * mw_model_n_params() for a dense model). A speed <= 0 leaves that figure unchanged. */
typedef struct mw_bench_record {
    const char* model; /* the file measured (for the record) */
    int32_t n_threads; /* threads of the measurement: must be those of the saved bandwidth */
    int32_t n_reps;    /* repetitions the means and standard deviations are over */
    uint64_t decode_bytes_per_token;
    double decode_tok_s, decode_tok_s_sd;
    double prompt_flops_per_token;
    double prompt_tok_s, prompt_tok_s_sd;
    bool force; /* record even when the machine looks contended */
} mw_bench_record;

/* Records the figures against the saved bandwidth (measured and saved first if there is none)
 * unless the machine looks contended: repetitions that disagree, or a bandwidth measured now that
 * is contended or below the saved one. Returns JSON: {"recorded": bool, "reason": why not,
 * "cache_file": path, "read_bandwidth_now_bytes_per_s": the check's, "device": what is saved}. */
MW_API char* mw_device_record_bench(const mw_bench_record* record);

/* ---- Synthetic models: real shapes, random weights ---------------------------------------- */

/* Progress of a long operation: `done` of `total` units (bytes unless said otherwise). */
typedef void (*mw_progress_fn)(void* user_data, uint64_t done, uint64_t total);

/* Writes a GGUF with random weights at the shape of `preset` (see mw_synth_presets_json), the
 * tensor types of the quantization `type` ("Q4_K_M", "Q8_0", "F16", ... as llama.cpp names
 * them) and a synthetic vocabulary of the model's size; loadable by memwall and llama.cpp. The
 * file appears atomically. Deterministic for a seed. */
MW_API mw_status mw_synth(const char* preset, const char* type, uint64_t seed, const char* path,
                          mw_progress_fn progress, void* user_data);
/* API 4: the same with MoE routers of uneven expert popularity (router_skew > 0: each layer's
 * experts in a random order, the k-th favoured as k^-router_skew; 0: mw_synth's uniform ones). */
MW_API mw_status mw_synth_skewed(const char* preset, const char* type, uint64_t seed,
                                 float router_skew, const char* path, mw_progress_fn progress,
                                 void* user_data);
/* [{"id": ..., "description": ..., "params": ...}, ...]; free with mw_free_string(). */
MW_API char* mw_synth_presets_json(void);

/* ---- Conversion to GGUF ------------------------------------------------------------------ */
/* Native converters (no Python): a Hugging Face folder (config.json, model*.safetensors with or
 * without model.safetensors.index.json, tokenizer.model or tokenizer.json, tokenizer_config.json)
 * of a llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, granite, cohere (Command R),
 * gemma2, gemma3_text, phi3 or deepseek_v2/v3 model, or a llama2.c checkpoint with its
 * tokenizer.bin, to a GGUF file with llama.cpp's metadata and tensor names.
 * The file is written atomically (a temporary file renamed into place) and checked by loading its
 * header before the call returns. */

typedef struct mw_convert_params {
    size_t struct_size;    /* API 8: set by mw_convert_default_params() (docs/c-api.md) */
    const char* outtype;   /* "f32", "f16", "bf16" or "q8_0"; NULL (default): f16 for Hugging Face
                              folders, f32 for llama2.c checkpoints */
    const char* vocab_pre; /* tokenizer.ggml.pre to write; NULL (default): the detected one */
    const char* name;      /* general.name; NULL (default): from config.json or the folder name */
    /* Called after each tensor is written (default NULL: none). */
    void (*progress)(int32_t done, int32_t total, const char* tensor, void* user_data);
    void* user_data;
} mw_convert_params;

typedef struct mw_convert_result {
    char arch[32]; /* general.architecture written */
    int32_t n_tensors;
    int32_t n_vocab;
    uint64_t n_params;
    uint64_t file_bytes;
    char warnings[2048]; /* things accepted but worth telling, one per line ("" if none) */
} mw_convert_result;

MW_API void mw_convert_params_init(mw_convert_params* params, size_t struct_size);
static inline mw_convert_params mw_convert_default_params(void) {
    mw_convert_params p;
    mw_convert_params_init(&p, sizeof p);
    return p;
}
/* out may be NULL. */
MW_API mw_status mw_convert_hf(const char* hf_dir, const char* out_path,
                               const mw_convert_params* params, mw_convert_result* out);
MW_API mw_status mw_convert_llama2c(const char* checkpoint, const char* tokenizer,
                                    const char* out_path, const mw_convert_params* params,
                                    mw_convert_result* out);

/* ---- Perplexity and KL divergence -------------------------------------------------------- */
/* As llama.cpp's llama-perplexity: the text is tokenized once (BOS added as the vocab asks), cut
 * into non-overlapping chunks of n_ctx tokens, each evaluated from an empty cache with its first
 * token replaced by BOS, and the second half of each chunk scored. With a base model (e.g. the
 * F16 original of a quantized model) the same chunks also run through it, giving the KL
 * divergence KL(base || model) per scored token and the agreement of the top tokens. */

typedef struct mw_perplexity_progress {
    int32_t chunk;    /* chunks done */
    int32_t n_chunks; /* chunks to do */
    int64_t n_scored;
    double ppl; /* so far */
    bool has_base;
    double kld_mean;       /* so far, with a base model */
    double top1_agreement; /* so far, fraction */
    double elapsed_s;
    double tokens_per_s; /* chunk tokens per second (each model) */
    int32_t n_threads;   /* threads evaluating */
} mw_perplexity_progress;

typedef struct mw_perplexity_params {
    size_t struct_size; /* API 8: set by mw_perplexity_default_params() (docs/c-api.md) */
    uint32_t n_ctx;     /* tokens per chunk; default 512; 0 = 512 */
    uint32_t n_batch;   /* default 0 = n_ctx */
    int32_t n_chunks;   /* at most this many chunks; default 0, <= 0 = all */
    int32_t n_threads;  /* default 0 = physical performance cores */
    mw_type type_k;     /* KV cache types (default F16, as llama.cpp) */
    mw_type type_v;
    /* Called after each chunk (default NULL: none); returning false stops after that chunk. */
    bool (*progress)(const mw_perplexity_progress* progress, void* user_data);
    void* user_data;
} mw_perplexity_params;

typedef struct mw_perplexity_result {
    int64_t n_text_tokens;
    int32_t n_chunks; /* evaluated */
    uint32_t n_ctx;
    int64_t n_scored; /* predictions scored */
    double ppl;
    double ppl_err; /* standard error, as llama.cpp prints after "+/-" */
    bool has_base;  /* the rest is set with a base model only */
    double base_ppl;
    double base_ppl_err;
    double kld_mean; /* mean KL(base || model), nats */
    double kld_err;  /* standard error of the mean */
    double kld_median;
    double kld_p99; /* 99th percentile */
    double kld_max;
    double top1_agreement; /* fraction of scored positions where both models' argmax agree */
    double ppl_ratio;      /* PPL(model) / PPL(base) */
    double seconds;
    int32_t n_threads;
} mw_perplexity_result;

MW_API void mw_perplexity_params_init(mw_perplexity_params* params, size_t struct_size);
static inline mw_perplexity_params mw_perplexity_default_params(void) {
    mw_perplexity_params p;
    mw_perplexity_params_init(&p, sizeof p);
    return p;
}
/* base may be NULL. The models must have been loaded with weights (not vocab_only). */
MW_API mw_status mw_perplexity(mw_model* model, mw_model* base, const char* text, size_t text_len,
                               const mw_perplexity_params* params, mw_perplexity_result* out);

/* ---- Quantization: quantize a model file, collect an importance matrix ------------------ */

/* Progress and notes of mw_quantize. */
typedef struct mw_quantize_progress {
    int32_t tensor_index; /* tensors written so far (1-based); 0 for a note */
    int32_t n_tensors;
    const char* tensor_name; /* the tensor written, or the one the note is about */
    const char* from_type;   /* its type in the input ("F16") */
    const char* to_type;     /* its type in the output ("Q4_K") */
    uint64_t bytes_done;     /* input tensor bytes written so far */
    uint64_t bytes_total;    /* input tensor bytes of the whole file */
    double elapsed_s;
    const char* note; /* a message for the user (e.g. a fallback type), else NULL */
    /* The note says that the tensor's row length forced a fallback: to_type instead of
     * wanted_type (NULL for other notes and for tensors written). */
    const char* wanted_type;
} mw_quantize_progress;

typedef struct mw_quantize_params {
    size_t struct_size;       /* API 8: set by mw_quantize_default_params() (docs/c-api.md) */
    const char* type;         /* "Q4_K_M" (default), "Q8_0", "F16", ... (llama-quantize's names) */
    const char* imatrix_path; /* weigh the error by this importance matrix; NULL (default): none */
    bool pure;             /* every quantizable tensor gets the type's base type (default false) */
    bool allow_requantize; /* accept input tensors that are already quantized (default false) */
    /* "PATTERN=TYPE" overrides: a regex searched in tensor names, a ggml type name ("q8_0");
     * the last match wins. Default none (NULL, 0). */
    const char* const* tensor_types;
    int32_t n_tensor_types;
    int32_t n_threads; /* default 0 = physical performance cores */
    /* Called after each tensor and for each note (default NULL: none). */
    void (*progress)(const mw_quantize_progress* progress, void* user_data);
    void* user_data;
    /* Search the scales exactly (default false: the fast search, as fast as llama-quantize and no
     * less accurate on any tensor; thorough is several times slower for 0.3 % to 1.5 % lower
     * RMSE; with an imatrix, a slightly lower KL divergence). */
    bool thorough;
} mw_quantize_params;

typedef struct mw_quantize_result {
    uint64_t in_file_bytes;
    uint64_t out_file_bytes;
    uint64_t n_elements;       /* of all tensors */
    double in_bits_per_weight; /* tensor data bits per element */
    double out_bits_per_weight;
    int32_t n_tensors;
    int32_t n_quantized;    /* tensors whose type changed */
    int32_t n_fallback;     /* tensors given a fallback type for their row length */
    int32_t n_with_imatrix; /* quantized with importance weights */
    double seconds;
} mw_quantize_result;

MW_API void mw_quantize_params_init(mw_quantize_params* params, size_t struct_size);
static inline mw_quantize_params mw_quantize_default_params(void) {
    mw_quantize_params p;
    mw_quantize_params_init(&p, sizeof p);
    return p;
}
/* Writes out_path (atomically) from in_path. out may be NULL. */
MW_API mw_status mw_quantize(const char* in_path, const char* out_path,
                             const mw_quantize_params* params, mw_quantize_result* out);

typedef struct mw_imatrix_progress {
    int32_t chunk; /* chunks done */
    int32_t n_chunks;
    double ppl; /* running perplexity of the second half of each chunk */
    double elapsed_s;
} mw_imatrix_progress;

typedef struct mw_imatrix_params {
    size_t struct_size;  /* API 8: set by mw_imatrix_default_params() (docs/c-api.md) */
    uint32_t n_ctx;      /* tokens per chunk; default 512; 0 = 512 */
    int32_t n_chunks;    /* at most this many chunks; default 0, <= 0 = all */
    int32_t n_threads;   /* default 0 = physical performance cores */
    bool process_output; /* also collect output.weight (default false) */
    const char* dataset; /* recorded in the file (the text's name); default NULL: none */
    /* Called after each chunk (default NULL: none). */
    void (*progress)(const mw_imatrix_progress* progress, void* user_data);
    void* user_data;
} mw_imatrix_params;

MW_API void mw_imatrix_params_init(mw_imatrix_params* params, size_t struct_size);
static inline mw_imatrix_params mw_imatrix_default_params(void) {
    mw_imatrix_params p;
    mw_imatrix_params_init(&p, sizeof p);
    return p;
}
/* Runs the model file over the text and writes the mean square of every matrix input column
 * (per expert for MoE) to out_path in llama.cpp's imatrix GGUF format. */
MW_API mw_status mw_imatrix(const char* model_path, const char* text, size_t text_len,
                            const char* out_path, const mw_imatrix_params* params);

/* ---- Remote models and file integrity: plan a URL, pull, verify ------------------------- */
/* A URL is http://, https:// or hf://OWNER/REPO[@REVISION]/FILE, which stands for
 * https://huggingface.co/OWNER/REPO/resolve/REVISION/FILE ($MEMWALL_HF_ENDPOINT replaces the
 * host; $HF_TOKEN is sent as a bearer token). mw_plan_json takes {"url": URL} among its models
 * and mw_check_fit a URL for its path: both read only the file's header, with HTTP range
 * requests (a server that ignores ranges is refused, not downloaded from). Built without libcurl
 * and OpenSSL (MEMWALL_NET=OFF), the remote calls and SHA-256 return MW_ERR_UNSUPPORTED. */

typedef struct mw_pull_progress {
    uint64_t done;         /* bytes of the file on disk */
    uint64_t total;        /* the file's size */
    uint64_t resumed_from; /* bytes that were already there (an earlier, interrupted pull) */
    double elapsed_s;
    double bytes_per_s; /* over the last few seconds */
    int32_t attempt;    /* of the current request (retries after dropped connections) */
    const char* note;   /* an event to tell (resume, retry, restart), else NULL */
} mw_pull_progress;

typedef struct mw_pull_params {
    size_t struct_size; /* API 8: set by mw_pull_default_params() (docs/c-api.md) */
    const char* sha256; /* expected, 64 hex digits; NULL: the server's ETag or X-Linked-Etag
                           when it is a SHA-256 (as Hugging Face serves it), else size only */
    bool check_fit;     /* plan the header first; MW_ERR_OUT_OF_MEMORY when the model does not
                           fit the memory available now (default true) */
    bool force;         /* download even when the plan says it does not fit (default false) */
    mw_context_params fit_params; /* the context to plan for */
    uint64_t max_bytes;           /* refuse a file larger than this; 0: the free disk space */
    int32_t retries;      /* attempts in a row without progress before giving up (default 5) */
    double retry_delay_s; /* back-off before the first retry, doubled each time (default 1) */
    /* About ten times a second and for each note (may be NULL); false stops the download,
     * which mw_pull reports as MW_ERR_IO with out->cancelled set (the .part stays). */
    bool (*progress)(const mw_pull_progress* progress, void* user_data);
    void* user_data;
} mw_pull_params;

typedef struct mw_pull_result {
    char path[4096]; /* the file written (or that would have been) */
    uint64_t file_bytes;
    uint64_t downloaded_bytes;  /* received in this call */
    uint64_t resumed_from;      /* bytes of an earlier .part kept */
    uint64_t header_bytes_read; /* to plan it */
    int32_t retries;
    int32_t restarts;       /* an earlier .part thrown away: the file changed on the server */
    char sha256[65];        /* of the file (lowercase hex), when computed */
    char sha256_source[16]; /* "given", "server", or "" when no SHA-256 was known */
    bool already_complete;  /* the file was there already, with the expected SHA-256 */
    bool cancelled;
    mw_fit fit; /* the plan, when check_fit */
    double seconds;
} mw_pull_result;

MW_API void mw_pull_params_init(mw_pull_params* params, size_t struct_size);
static inline mw_pull_params mw_pull_default_params(void) {
    mw_pull_params p;
    mw_pull_params_init(&p, sizeof p);
    return p;
}
/* Downloads url to out_path (NULL: the URL's last path segment in the current directory) by
 * way of out_path.part, resumable by calling again: a .part is continued with a range request
 * when the server's ETag and size are still those it was started with, else started over. The
 * free disk space is checked before anything is written, dropped connections are retried with
 * back-off, and the size and SHA-256 are checked before the file is renamed into place (a
 * mismatch keeps the .part and creates nothing). out may be NULL. */
MW_API mw_status mw_pull(const char* url, const char* out_path, const mw_pull_params* params,
                         mw_pull_result* out);

typedef struct mw_verify_params {
    size_t struct_size; /* API 8: set by mw_verify_default_params() (docs/c-api.md) */
    const char* sha256; /* compare the whole file's SHA-256 with this (64 hex digits); NULL */
    int32_t n_threads;  /* for the value pass; 0 = physical performance cores */
    /* Now and then during the long passes ("values", "sha256"); may be NULL. */
    void (*progress)(const char* pass, uint64_t done, uint64_t total, void* user_data);
    void* user_data;
} mw_verify_params;

MW_API void mw_verify_params_init(mw_verify_params* params, size_t struct_size);
static inline mw_verify_params mw_verify_default_params(void) {
    mw_verify_params p;
    mw_verify_params_init(&p, sizeof p);
    return p;
}
/* Checks a GGUF file on disk: its structure, its size against the tensor table (truncation:
 * where and how many bytes are missing), every tensor's bounds and type, every value decoded
 * (non-finite floats and block scales), the model and vocabulary as mw_model_load binds them,
 * and the SHA-256 when given. Returns the report as JSON (keys in docs/verify.md; "ok" is true
 * only when every check passes); NULL when the file cannot be opened or sha256 is malformed. */
MW_API char* mw_verify_json(const char* path, const mw_verify_params* params);
/* ---- Chat templates ---------------------------------------------------------------------- */
/* Jinja chat templates rendered as Hugging Face transformers renders them (Python Jinja2 3.1 in
 * its sandbox, trim_blocks and lstrip_blocks; tojson is json.dumps; raise_exception() and
 * strftime_now() exist): the model's tokenizer.chat_template, a built-in by name ("chatml",
 * "llama3", ...; see mw_chat_builtin_templates) or template text. A template is untrusted
 * input: rendering is bounded in loop iterations, call depth and output size. Errors
 * (MW_ERR_INVALID_ARGUMENT) name the template, the line and the construct in mw_last_error(). */

typedef struct mw_chat_message {
    const char* role;    /* "system", "user", "assistant", "tool", ... (UTF-8, NUL-terminated) */
    const char* content; /* UTF-8, NUL-terminated; NULL gives a null content */
} mw_chat_message;

/* Renders Jinja `source` (source_len bytes) with the variables of `context_json`, a JSON object
 * (messages, add_generation_prompt, bos_token, eos_token, tools, any other variable), as
 * `memwall template` does. name: the template's name in messages (NULL: "template").
 * strftime_now: what strftime_now() returns whatever the format (NULL: today's date). On
 * success *out holds the text (free it with mw_free_string) and *out_len, unless NULL, its
 * length (the text may contain NUL bytes). */
MW_API mw_status mw_template_render(const char* source, size_t source_len, const char* name,
                                    const char* context_json, const char* strftime_now, char** out,
                                    size_t* out_len);

/* The prompt for a conversation, like llama.cpp's llama_chat_apply_template. tmpl: NULL for
 * the model's own (tokenizer.chat_template, else a built-in chosen from its special tokens,
 * else "chatml"), or the name of a built-in, or Jinja text. model may be NULL when tmpl is
 * given (bos_token and eos_token are then ""); otherwise they are the text of the model's BOS
 * and EOS tokens. Returns the length of the prompt in bytes and writes at most buf_size bytes
 * of it, NUL included (call again with a larger buffer when the result is >= buf_size), or
 * -1 on error with mw_last_error() saying why. */
MW_API int32_t mw_chat_apply_template(const mw_model* model, const char* tmpl,
                                      const mw_chat_message* messages, size_t n_messages,
                                      bool add_generation_prompt, char* buf, int32_t buf_size);

/* The same from a JSON request, for tool definitions, tool calls and other variables:
 * {"messages": [{"role": ..., "content": ..., "tool_calls": [...]}, ...], "tools": [...],
 *  "add_generation_prompt": true, "variables": {"enable_thinking": false},
 *  "strftime_now": "26 Jul 2024"}; only messages is required (add_generation_prompt defaults
 * to true; without "tools" the template sees `tools` undefined). Key order is kept. *out: the
 * prompt (free it with mw_free_string); *out_len, unless NULL, its length. */
MW_API mw_status mw_chat_render(const mw_model* model, const char* tmpl, const char* request_json,
                                char** out, size_t* out_len);

/* Which template the two calls above use for (model, tmpl), as JSON: {"name": ...,
 * "origin": "model"|"builtin"|"text"|"guessed"|"fallback", "description": ..., "source": ...}.
 * NULL on error. Free it with mw_free_string. */
MW_API char* mw_chat_template_info(const mw_model* model, const char* tmpl);

/* Names of the built-in templates: writes up to n of them (static strings) to names (which
 * may be NULL when n is 0) and returns how many there are. */
MW_API int32_t mw_chat_builtin_templates(const char** names, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* MEMWALL_H */
