; Synthetic benchmark 5: one loop whose iterations are independent of each other and of
; anything outside the loop. Iteration i filters block 0x100+4i into block 0x101+4i,
; then transforms it into block 0x102+4i.
        mov   100 0 r1 0 0 0 0        ; r1 = base of the loop's regions
        mov   4   0 r2 0 0 0 0        ; r2 = stride between iterations
        mov   1   0 r3 0 0 0 0        ; r3 = 1
        lbeg  8   r4 0 0 0 0 0        ; 8 iterations, counter r4
        mul   r4 r2 r5 0 0 0 0        ; r5 = 4i
        add   r5 r1 r6 0 0 0 0        ; r6 = input block
        add   r6 r3 r7 0 0 0 0        ; r7 = filtered block
        add   r7 r3 r8 0 0 0 0        ; r8 = transformed block
        real_fir r6 1 r7 1 1 0 1 0
        dct_64   r7 1 r8 1 2 0 1 0
        lend  0 r4 0 0 0 0 0
