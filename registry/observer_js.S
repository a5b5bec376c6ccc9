/*
 * observer_js.S - embeds registry/observer.js into the binary at build time,
 * NUL-terminated, as reg_observer_js (see registry/registry.h).
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
