// The translation unit that builds the precompiled headers of
// cmake/PrecompiledHeaders.cmake; it defines nothing.
