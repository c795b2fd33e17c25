#version 450
// y[t][row0 + r] = sum_c W[r][c] * x[t][c] for the rows of one binding of a weight matrix, in
// its GGUF layout (compiled once per type: -DTYPE_F32, -DTYPE_Q4_K, -DTYPE_IQ4_XS, ...). A workgroup takes
// GROUP / 2^tpr_log2 weight rows and a group of TOKENS tokens; each row gets 2^tpr_log2
// invocations (no more than the row has 32-element units, so short rows leave none idle). An
// invocation decodes its units of the row once and applies them to every token of the group;
// then each row's invocations sum their partials. Weights are read as bytes from 32-bit words,
// so no block needs any alignment.

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Weights { uint w[]; };
layout(std430, set = 1, binding = 0) readonly buffer Input { float x[]; };
layout(std430, set = 1, binding = 1) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
    uint w_offset;   // bytes from the binding's start to the chunk's first row
    uint row_bytes;  // bytes of one row
    uint n_cols;     // elements of one row (and of an input row)
    uint n_rows;     // rows of this chunk
    uint row0;       // the chunk's first row in the matrix
    uint n_tokens;
    uint ldy;        // floats between output rows (the matrix's rows)
    uint tpr_log2;   // log2 of the invocations per row (0..6)
} p;

#define TOKENS 8
#define GROUP 64

shared float partial[TOKENS][GROUP];

uint rd8(uint o) { return (w[o >> 2] >> ((o & 3u) * 8u)) & 0xffu; }
uint rd16(uint o) { return rd8(o) | (rd8(o + 1u) << 8); }
float rdhalf(uint o) { return unpackHalf2x16(rd16(o)).x; }
int rdi8(uint o) { return int(rd8(o) << 24) >> 24; }

// Decodes unit u (elements 32u .. 32u + 31) of the row starting at byte rb into v; elements past
// the row's end (F32/F16 rows need not be a multiple of 32) are 0.
void decode_unit(uint rb, uint u, out float v[32]) {
#if defined(TYPE_F32)
    for (uint i = 0u; i < 32u; ++i) {
        const uint c = u * 32u + i;
        v[i] = c < p.n_cols ? uintBitsToFloat(w[(rb + c * 4u) >> 2]) : 0.0;
    }
#elif defined(TYPE_F16)
    for (uint i = 0u; i < 32u; ++i) {
        const uint c = u * 32u + i;
        v[i] = c < p.n_cols ? rdhalf(rb + c * 2u) : 0.0;
    }
#elif defined(TYPE_Q4_0)
    const uint b = rb + u * 18u;
    const float d = rdhalf(b);
    for (uint i = 0u; i < 16u; ++i) {
        const uint q = rd8(b + 2u + i);
        v[i] = d * float(int(q & 15u) - 8);
        v[i + 16u] = d * float(int(q >> 4) - 8);
    }
#elif defined(TYPE_Q8_0)
    const uint b = rb + u * 34u;
    const float d = rdhalf(b);
    for (uint i = 0u; i < 32u; ++i) v[i] = d * float(rdi8(b + 2u + i));
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#if defined(TYPE_Q4_K)
    const uint b = rb + (u >> 3) * 144u;
    const uint qs = b + 16u;
#else
    const uint b = rb + (u >> 3) * 176u;
    const uint qh = b + 16u;
    const uint qs = b + 48u;
#endif
    const uint j = u & 7u;  // the sub-block of the 256-element super-block
    const float d = rdhalf(b), dmin = rdhalf(b + 2u);
    const uint sc = b + 4u;  // 12 bytes: 8 six-bit scales and 8 six-bit mins
    uint s, m;
    if (j < 4u) {
        s = rd8(sc + j) & 63u;
        m = rd8(sc + j + 4u) & 63u;
    } else {
        s = (rd8(sc + j + 4u) & 15u) | ((rd8(sc + j - 4u) >> 6) << 4);
        m = (rd8(sc + j + 4u) >> 4) | ((rd8(sc + j) >> 6) << 4);
    }
    const float ds = d * float(s), dm = dmin * float(m);
    const uint q = qs + (j >> 1) * 32u;  // sub-blocks 2k and 2k+1 share 32 bytes: low, high
    const uint shift = (j & 1u) * 4u;
    for (uint l = 0u; l < 32u; ++l) {
        uint code = (rd8(q + l) >> shift) & 15u;
#if defined(TYPE_Q5_K)
        code |= ((rd8(qh + l) >> j) & 1u) << 4;
#endif
        v[l] = ds * float(code) - dm;
    }
#elif defined(TYPE_Q6_K)
    const uint b = rb + (u >> 3) * 210u;
    const uint j = u & 7u;
    const uint n = j >> 2, k = j & 3u;  // the 128-element half, and which quarter of it
    const float d = rdhalf(b + 208u);
    const uint ql = b + n * 64u + ((k & 1u) != 0u ? 32u : 0u);
    const uint qh = b + 128u + n * 32u;
    const uint nibble = k < 2u ? 0u : 4u;
    const uint sc = b + 192u + n * 8u + 2u * k;
    for (uint l = 0u; l < 32u; ++l) {
        const int code = int(((rd8(ql + l) >> nibble) & 15u) | (((rd8(qh + l) >> (2u * k)) & 3u) << 4)) - 32;
        v[l] = d * float(rdi8(sc + l / 16u)) * float(code);
    }
#elif defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS) || defined(TYPE_MXFP4)
    // Nibbles through a 16-value table (low nibbles elements 0-15, high 16-31), times a scale:
    // IQ4_NL's fp16 d; IQ4_XS's d * (ls_j - 32) of sub-block j; MXFP4's E8M0 exponent e, as
    // 2^(e - 128) because its table holds the E2M1 values doubled.
#if defined(TYPE_MXFP4)
    const float table[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0,
                                      0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);
    const uint b = rb + u * 17u;
    const uint e = rd8(b);
    const float d = uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
    const uint qs = b + 1u;
#else
    const float table[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                      1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);
#if defined(TYPE_IQ4_NL)
    const uint b = rb + u * 18u;
    const float d = rdhalf(b);
    const uint qs = b + 2u;
#else
    const uint b = rb + (u >> 3) * 136u;
    const uint j = u & 7u;
    const uint ls = ((rd8(b + 4u + j / 2u) >> (4u * (j & 1u))) & 15u) |
                    (((rd16(b + 2u) >> (2u * j)) & 3u) << 4);
    const float d = rdhalf(b) * float(int(ls) - 32);
    const uint qs = b + 8u + 16u * j;
#endif
#endif
    for (uint i = 0u; i < 16u; ++i) {
        const uint q = rd8(qs + i);
        v[i] = d * table[q & 15u];
        v[i + 16u] = d * table[q >> 4];
    }
#else
#error "compile with -DTYPE_<type>"
#endif
}

void main() {
    const uint tpr = 1u << p.tpr_log2;
    const uint lid = gl_LocalInvocationID.x;
    const uint lane = lid & (tpr - 1u);
    const uint first = lid - lane;  // this row's first invocation
    const uint r = gl_WorkGroupID.x * (GROUP >> p.tpr_log2) + (lid >> p.tpr_log2);
    const uint t0 = gl_WorkGroupID.y * TOKENS;
    const bool row_ok = r < p.n_rows;
    const uint rb = p.w_offset + r * p.row_bytes;
    const uint n_units = (p.n_cols + 31u) / 32u;
    float acc[TOKENS];
    for (uint t = 0u; t < TOKENS; ++t) acc[t] = 0.0;
    float v[32];
    for (uint u = lane; row_ok && u < n_units; u += tpr) {
        decode_unit(rb, u, v);
        for (uint t = 0u; t < TOKENS; ++t) {
            if (t0 + t >= p.n_tokens) break;
            const uint xb = (t0 + t) * p.n_cols + u * 32u;
            const uint valid = min(32u, p.n_cols - u * 32u);
            float s = 0.0;
            for (uint i = 0u; i < valid; ++i) s += v[i] * x[xb + i];
            acc[t] += s;
        }
    }
    for (uint t = 0u; t < TOKENS; ++t) partial[t][lid] = acc[t];
    barrier();
    for (uint stride = tpr >> 1; stride > 0u; stride >>= 1) {
        if (lane < stride) {
            for (uint t = 0u; t < TOKENS; ++t) partial[t][lid] += partial[t][lid + stride];
        }
        barrier();
    }
    if (lane == 0u && row_ok) {
        for (uint t = 0u; t < TOKENS; ++t) {
            if (t0 + t < p.n_tokens) y[(t0 + t) * p.ldy + p.row0 + r] = partial[t][first];
        }
    }
}
