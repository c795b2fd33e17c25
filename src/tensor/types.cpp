#include "tensor/types.h"

namespace mw {

const TypeTraits* type_traits(GgmlType) { return nullptr; }
const TypeTraits* type_traits(uint32_t) { return nullptr; }

}  // namespace mw
