# The paper's loop listing in the assembler's extended form: comments, labels, rN
# register names and 0d decimal numbers. It assembles to the same kind of words; the
# plain form stays accepted everywhere.
        mov   58 0 r2 0 1 0 0 0001      ; r2 = 0x58: base of the input regions
        mov   3  0 r3 0 2 0 0 0001      ; r3 = 3 (unused by the body, as in the paper)
        mov   75 0 r6 0 3 0 0 0001      ; r6 = 0x75: base of the output regions
        lbeg  0d4 r4 0 0 4 0 0 0001     ; four iterations, counter r4 = 0, 1, 2, 3
        add   r4 r2 r5 0 5 0 0 0001     ; r5 = r4 + r2
        add   r4 r6 r7 0 6 0 0 0001     ; r7 = r4 + r6
        iir   r5 3 r7 3 7 0 1 0000      ; K bit 0: A and C are registers
        lend  0 r4 0 0 8 0 0 0001
        jump  0 0 done 0 9 0 0 0000     ; labels serve as jump and if targets
        vector_add 10 2 20 2 a 0 0 0000 ; skipped
done:
        vector_max 20 2 30 1 b 0 0 0000
