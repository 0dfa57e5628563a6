// SPDX-License-Identifier: GPL-2.0
#define pr_fmt(fmt) KBUILD_MODNAME "-event_queue: " fmt

#include <linux/slab.h>
#include <linux/sched.h>
#include <uapi/linux/blksnap.h>
#include "event_queue.h"

/* The event data must fit into the data field of the ioctl's structure. */
#define EVENT_DATA_MAX \
	sizeof_field(struct blk_snap_snapshot_event, data)

void event_queue_init(struct event_queue *event_queue)
{
	INIT_LIST_HEAD(&event_queue->list);
	spin_lock_init(&event_queue->lock);
	init_waitqueue_head(&event_queue->wq_head);
	event_queue->closed = false;
}

/**
 * event_queue_close() - Wake every waiter for good.
 * @event_queue:
 *	The queue of a snapshot that is being destroyed.
 *
 * A thread waiting for the events of a destroyed snapshot must not wait
 * for its timeout: it is told at once that the snapshot is gone.
 */
void event_queue_close(struct event_queue *event_queue)
{
	spin_lock(&event_queue->lock);
	event_queue->closed = true;
	spin_unlock(&event_queue->lock);
	wake_up_all(&event_queue->wq_head);
}

/* Is nothing queued? */
bool event_queue_empty(struct event_queue *event_queue)
{
	bool empty;

	spin_lock(&event_queue->lock);
	empty = list_empty(&event_queue->list);
	spin_unlock(&event_queue->lock);
	return empty;
}

void event_queue_done(struct event_queue *event_queue)
{
	struct event *event;

	spin_lock(&event_queue->lock);
	while (!list_empty(&event_queue->list)) {
		event = list_first_entry(&event_queue->list, struct event,
					 link);
		list_del(&event->link);
		event_free(event);
	}
	spin_unlock(&event_queue->lock);
}

/* An event with room for @data_size bytes, for event_queue_push(). */
struct event *event_alloc(gfp_t flags, int data_size)
{
	if (WARN_ON(data_size < 0 || data_size > EVENT_DATA_MAX))
		return NULL;
	return kzalloc(sizeof(struct event) + data_size, flags);
}

int event_gen(struct event_queue *event_queue, gfp_t flags, int code,
	      const void *data, int data_size)
{
	struct event *event = event_alloc(flags, data_size);

	if (!event)
		return -ENOMEM;
	return event_queue_push(event_queue, event, code, data, data_size);
}

/*
 * Queue @event, made by event_alloc() for at least @data_size bytes; the
 * queue owns it from here. Return: 0, or -ESRCH if the queue is closed.
 */
int event_queue_push(struct event_queue *event_queue, struct event *event,
		     int code, const void *data, int data_size)
{
	event->time = ktime_get();
	event->code = code;
	event->data_size = data_size;
	memcpy(event->data, data, data_size);

	pr_debug("Generate event: time=%lld code=%d data_size=%d\n",
		 event->time, event->code, event->data_size);

	spin_lock(&event_queue->lock);
	if (event_queue->closed) {
		spin_unlock(&event_queue->lock);
		event_free(event);
		return -ESRCH;
	}
	list_add_tail(&event->link, &event_queue->list);
	spin_unlock(&event_queue->lock);

	wake_up(&event_queue->wq_head);
	return 0;
}

static struct event *event_pop(struct event_queue *event_queue)
{
	struct event *event;

	spin_lock(&event_queue->lock);
	event = list_first_entry_or_null(&event_queue->list, struct event,
					 link);
	if (event)
		list_del(&event->link);
	else if (event_queue->closed)
		event = ERR_PTR(-ESRCH);
	spin_unlock(&event_queue->lock);

	return event;
}

/**
 * event_wait() - Wait for an event and take it from the queue.
 * @event_queue:
 *	The queue.
 * @timeout_ms:
 *	How long to wait, in milliseconds.
 *
 * Return: the event, to be released with event_free(), or ERR_PTR():
 * -ENOENT on timeout, -EINTR when interrupted by a signal, -ESRCH when the
 * queue was closed.
 */
struct event *event_wait(struct event_queue *event_queue,
			 unsigned long timeout_ms)
{
	struct event *event = NULL;
	long ret;

	ret = wait_event_interruptible_timeout(event_queue->wq_head,
					       (event = event_pop(event_queue)) != NULL,
					       msecs_to_jiffies(timeout_ms));
	if (event)
		return event;
	if (ret < 0)
		return ERR_PTR(-EINTR);
	return ERR_PTR(-ENOENT);
}
