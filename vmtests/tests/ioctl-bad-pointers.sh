# Every ioctl given a NULL or an unmapped argument pointer fails with
# EFAULT, and with ENOTTY when its number, size or direction is not the
# uapi's; nothing is printed by the kernel but its error messages.
# timeout: 120
. /tests/common.sh

load_module
for nr in 0 1 2 3 4 5 6 7 8 9 10 11; do
	for ptr in NULL WILD; do
		cmd=
		case $nr in
		0) cmd=$((0x40085600)) ;;   # _IOW('V', 0, 8)
		1) cmd=$((0x40085601)) ;;
		2) cmd=$((0x40105602)) ;;
		3) cmd=$((0x80185603)) ;;   # _IOR, 24 bytes
		4) cmd=$((0x80185604)) ;;
		5) cmd=$((0x40205605)) ;;
		6) cmd=$((0x80105606)) ;;
		7) cmd=$((0x40285607)) ;;
		8) cmd=$((0x80105608)) ;;
		9) cmd=$((0x40105609)) ;;
		10) cmd=$((0x4020560a)) ;;
		11) cmd=$((0x5000560b)) ;;  # 4096 bytes
		esac
		expect_err EFAULT bsctl raw $cmd $ptr
		# The same number with another size is not ours.
		expect_err ENOTTY bsctl raw $((cmd + 0x10000)) $ptr
	done
done
exit 0
