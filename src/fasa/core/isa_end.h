// Closes the region opened by isa_begin.h.
#pragma GCC diagnostic pop
#pragma GCC pop_options
#undef FASA_ISA_REGION
