"""``hts asm`` and ``hts disasm``: task programs to images and back."""

from pathlib import Path

from .arguments import add_config, system
from .command import Command


def _add_asm_arguments(parser):
    parser.add_argument("program", metavar="PROG.s", help="assembly source")
    parser.add_argument("-o", "--output", metavar="OUT", help="image to write (default: PROG with suffix .hex)")
    add_config(parser)


def run_asm(args) -> int:
    from hts.assembler import assemble_file, write_image
    from hts.base.output import check_outputs
    config = system(args.config)
    program = assemble_file(args.program, config)
    output = Path(args.output) if args.output else Path(args.program).with_suffix(".hex")
    check_outputs([output], [args.program])
    write_image(output, program)
    print(f"{args.program}: {len(program)} instructions -> {output}")
    return 0


def _add_disasm_arguments(parser):
    parser.add_argument("image", metavar="IMAGE", help="program image (.hex or .bin)")
    add_config(parser)


def run_disasm(args) -> int:
    from hts.assembler import disassemble, load_image
    config = system(args.config)
    print("\n".join(disassemble(load_image(args.image, config), config)))
    return 0


ASM = Command(
    "asm", help="assemble a task program into a .hex or .bin image",
    description="Assemble PROG (assembly source) into a program image. The output format follows the suffix: "
                ".hex is one 32-hex-digit word per line ($readmemh), .bin is 16 little-endian bytes per "
                "instruction. On any error nothing is written and the errors are printed as file:line:col: "
                "message. A source is UTF-8 text of at most 512 bytes per instruction of program memory "
                "(hts.program_words), or 1 MiB if that is more.",
    add_arguments=_add_asm_arguments, run=run_asm)

DISASM = Command(
    "disasm", help="print a .hex or .bin image back as assembly",
    description="Disassemble a program image into the paper's plain assembly form (every field hex), which "
                "assembles back to the same words.",
    add_arguments=_add_disasm_arguments, run=run_disasm)
