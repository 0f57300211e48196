// The palette, from GET /api/components: every node kind by group. Drag a kind onto the canvas,
// or click it to add it in the middle of the view.
import type { Components, Kind } from '../api/client';

export const KIND_MIME = 'application/x-scenario-kind';

export function Palette({ components, onAdd }: { components: Components; onAdd: (kind: Kind) => void }) {
  const groups = components.groups ?? [];
  const kinds = components.kinds ?? [];
  return (
    <aside className="palette" data-testid="palette">
      {groups.map((g) => (
        <section key={g}>
          <h4>{g}</h4>
          {kinds
            .filter((k) => k.group === g)
            .map((k) => (
              <div
                key={k.id}
                className={`palette-item group-${g}`}
                draggable
                title={k.description}
                data-testid={`palette-${k.id}`}
                onDragStart={(e) => {
                  e.dataTransfer.setData(KIND_MIME, k.id);
                  e.dataTransfer.effectAllowed = 'move';
                }}
                onDoubleClick={() => onAdd(k)}
              >
                {k.label}
              </div>
            ))}
        </section>
      ))}
    </aside>
  );
}
