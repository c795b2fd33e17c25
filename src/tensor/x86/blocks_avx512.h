// The AVX-512 set's decode kernels of the 32-element types (gemv_blocks_avx512.cpp), which use
// VBMI byte permutes. Only AVX-512 files may call them.
#pragma once

#include "tensor/x86/x86.h"

namespace mw::x86::vbmi {

void gemv_q4_0(const MatmulArgs& a);
void gemv_q4_1(const MatmulArgs& a);
void gemv_iq4_nl(const MatmulArgs& a);
void gemv_mxfp4(const MatmulArgs& a);
void gemv_q5_0(const MatmulArgs& a);
void gemv_q5_1(const MatmulArgs& a);
void gemv_q8_0(const MatmulArgs& a);

}  // namespace mw::x86::vbmi
