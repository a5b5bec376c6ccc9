/*
 * observer_js.S - embeds the observer into the binary at build time,
 * NUL-terminated, as reg_observer_js (see registry/registry.h): the file
 * is BUILD/registry/observer.js, joined from registry/observer/*.js by the
 * Makefile, found through the assembler's include path (-I BUILD).
 */
    .section .rodata
    .global reg_observer_js
    .type reg_observer_js, @object
reg_observer_js:
    .incbin "registry/observer.js"
    .byte 0
    .global reg_observer_js_end
reg_observer_js_end:
    .section .note.GNU-stack,"",@progbits
